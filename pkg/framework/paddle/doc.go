// Package paddle is EDL's PaddlePaddle framework: the paddlecloud-job
// launcher (paddle_k8s) in every role, pservers, and for a fault-tolerant
// job a master whose etcd task queue lets trainers come and go for free.
// Its pods are judged as the original EDL judged them.
package paddle

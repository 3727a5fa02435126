// Package paddlepaddle holds the API group name shared by every version of
// the paddlepaddle.org API.
package paddlepaddle

// GroupName is the API group of the TrainingJob resource. It is the group the
// original ThirdPartyResource "training-job.paddlepaddle.org" lived in, so job
// files written for the original controller keep their apiVersion.
const GroupName = "paddlepaddle.org"

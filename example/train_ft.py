#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""A fault-tolerant PaddlePaddle (v2 API) training program for EDL.

It fits a linear regression on the UCI housing data set, the smallest model
that still shows the moving parts of an elastic job:

    python train_ft.py prepare   # once: write the data set as RecordIO chunks
    python train_ft.py train     # in every trainer: the job's trainer.entrypoint

`train` reads the environment the EDL controller gives every pod of a
TrainingJob (docs/api.md, "Pod contract"):

    PADDLE_JOB_NAME             the job's name
    PADDLE_TRAINING_ROLE        MASTER, PSERVER or TRAINER
    PADDLE_ETCD_ENDPOINTS       fault-tolerant jobs: the etcd that holds the
                                master's task queue and the pserver registry
    PADDLE_INIT_PORT, PADDLE_INIT_PORTS_NUM, PADDLE_INIT_PORTS_NUM_FOR_SPARSE
    PADDLE_INIT_TRAINER_COUNT   GPUs per trainer, else whole CPUs
    PADDLE_INIT_USE_GPU         "true" when the trainers have GPUs
    PADDLE_INIT_NUM_GRADIENT_SERVERS, PADDLE_INIT_NUM_PASSES
    TRAINER_PACKAGE             trainer.workspace: where this program lives
    POD_NAME, NAMESPACE         from the downward API

In a fault-tolerant job (spec.fault_tolerant: true) the trainers do not know
each other: each one asks the master for the next chunk of data and finds the
pservers through etcd. That is what lets EDL add trainers to a running job and
remove them: a new trainer starts asking for chunks, and the chunks of a
trainer that goes away time out and are handed to another. The number of
trainers in TRAINERS / PADDLE_TRAINERS_NUM is only the count the job started
with.

A job ends when a trainer exits 0: the controller then marks the job
Succeeded and scales every role to zero. So a trainer returns from `train`
only once the master says every pass is done; any error exits non-zero and the
ReplicaSet restarts the trainer (a fault-tolerant job fails only after
trainer.max-restarts restarts of one pod).

The data set must be where both the master and the trainers can read it: put
it on a volume shared by every pod of the job (spec.volumes and
spec.volumeMounts) and point DATA_DIR at it (default /data/uci_housing).
"""

from __future__ import print_function

import glob
import os
import pickle
import sys

# paddle.v2 is imported where it is used, so that `python train_ft.py` with
# no arguments prints its usage even where PaddlePaddle is not installed.

FEATURES = 13


def env(name, default=None):
    """Returns the environment variable name, or default when unset or empty."""
    value = os.environ.get(name, "")
    return value if value != "" else default


def env_int(name, default):
    """Returns the environment variable name as an int."""
    value = env(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        sys.exit("%s=%r is not an integer" % (name, value))


def env_bool(name, default=False):
    """Returns the environment variable name as a bool ("true", "1", "yes")."""
    value = env(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes")


def data_dir():
    return env("DATA_DIR", "/data/uci_housing")


def chunk_glob():
    return os.path.join(data_dir(), "uci_housing_train-*")


def output_dir():
    return env("OUTPUT_DIR", os.path.join(env("TRAINER_PACKAGE", "/workspace"), "output"))


def network(paddle):
    """Builds the model and returns its cost layer."""
    x = paddle.layer.data(name="x", type=paddle.data_type.dense_vector(FEATURES))
    y = paddle.layer.data(name="y", type=paddle.data_type.dense_vector(1))
    y_predict = paddle.layer.fc(input=x, size=1, act=paddle.activation.Linear())
    return paddle.layer.square_error_cost(input=y_predict, label=y)


def prepare():
    """Writes the training data as RecordIO chunks the master hands out."""
    import paddle.v2 as paddle

    target = data_dir()
    if not os.path.isdir(target):
        os.makedirs(target)
    # Small chunks make fine-grained tasks: a trainer that leaves loses
    # little work, and a trainer that arrives gets some soon.
    paddle.dataset.common.convert(
        target, paddle.dataset.uci_housing.train(), 50, "uci_housing_train")
    print("wrote %d chunks to %s" % (len(glob.glob(chunk_glob())), target))


def train():
    """Trains as one trainer of the job until the master has no tasks left."""
    role = env("PADDLE_TRAINING_ROLE", "TRAINER")
    if role != "TRAINER":
        # The launcher (paddle_k8s) runs the master and the pservers itself;
        # only trainers run this program.
        sys.exit("train runs in trainer pods, not in a %s pod" % role)

    import paddle.v2 as paddle

    job = env("PADDLE_JOB_NAME", "local")
    pod = env("POD_NAME", "trainer")
    etcd = env("PADDLE_ETCD_ENDPOINTS")
    use_gpu = env_bool("PADDLE_INIT_USE_GPU")
    passes = env_int("PADDLE_INIT_NUM_PASSES", 0) or 1

    # paddle.init would also read every PADDLE_INIT_* variable by itself;
    # spelling them out shows what the controller provides.
    paddle.init(
        use_gpu=use_gpu,
        trainer_count=env_int("PADDLE_INIT_TRAINER_COUNT", 1),
        port=env_int("PADDLE_INIT_PORT", 7164),
        ports_num=env_int("PADDLE_INIT_PORTS_NUM", 1),
        ports_num_for_sparse=env_int("PADDLE_INIT_PORTS_NUM_FOR_SPARSE", 0),
        num_gradient_servers=env_int("PADDLE_INIT_NUM_GRADIENT_SERVERS", 1))

    cost = network(paddle)
    parameters = paddle.parameters.create(cost)
    optimizer = paddle.optimizer.Momentum(momentum=0, learning_rate=1e-3)

    if etcd:
        # Fault tolerant: pservers are found through etcd, data comes from
        # the master's task queue, one chunk at a time.
        trainer = paddle.trainer.SGD(
            cost=cost, parameters=parameters, update_equation=optimizer,
            is_local=False, pserver_spec=etcd, use_etcd=True)
        records = paddle.reader.creator.cloud_reader([chunk_glob()], etcd)
        reader = paddle.reader.map_readers(pickle.loads, records)
    else:
        # Not fault tolerant: the launcher passed the pservers in the
        # PADDLE_INIT_* environment; every trainer reads the whole data set,
        # and the number of trainers must not change while the job runs.
        print("PADDLE_ETCD_ENDPOINTS is not set: training without fault "
              "tolerance; set fault_tolerant: true in the TrainingJob to let "
              "EDL scale it", file=sys.stderr)
        trainer = paddle.trainer.SGD(
            cost=cost, parameters=parameters, update_equation=optimizer,
            is_local=False)
        reader = paddle.dataset.uci_housing.train()

    out = output_dir()

    def on_event(event):
        if isinstance(event, paddle.event.EndIteration) and event.batch_id % 100 == 0:
            print("job %s pod %s pass %d batch %d cost %f" % (
                job, pod, event.pass_id, event.batch_id, event.cost))
        if isinstance(event, paddle.event.EndPass):
            if not os.path.isdir(out):
                os.makedirs(out)
            path = os.path.join(out, "%s-pass-%05d.tar" % (pod, event.pass_id))
            with open(path, "wb") as f:
                trainer.save_parameter_to_tar(f)
            print("job %s pod %s pass %d done, parameters in %s" % (
                job, pod, event.pass_id, path))

    trainer.train(
        reader=paddle.batch(paddle.reader.shuffle(reader, buf_size=500), batch_size=16),
        feeding={"x": 0, "y": 1},
        event_handler=on_event,
        num_passes=passes)
    print("job %s pod %s finished %d passes" % (job, pod, passes))


def main(argv):
    commands = {"prepare": prepare, "train": train}
    if len(argv) != 2 or argv[1] not in commands:
        print("usage: %s prepare|train" % os.path.basename(argv[0]), file=sys.stderr)
        return 2
    commands[argv[1]]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#pragma once
// Where a worker runs (issue 16, docs/remote-workers.md): on this machine, on an SSH host, or in
// a Slurm allocation. A worker spec (`--workers SPEC`, Launch's "Workers") lists GPUs; each GPU is
// one WorkerTarget, one supervisor and one worker at a time, addressed as `host:gpu`.
//
//   SPEC   := PART (';' PART)*
//   PART   := 'local' [':' GPUS]                     this machine's GPUs (default: the caller's)
//           | 'ssh:' HOST ':' GPUS (':' OPTION)*     `ssh -T HOST` with the user's own ssh config
//           | 'slurm:' KEY '=' VALUE (',' KEY '=' VALUE)*
//                                                    keys: partition (required), gpus (default 1),
//                                                    time (srun --time), worker (the program),
//                                                    env (NAME=VALUE, repeatable)
//   OPTION := 'worker=' PATH                         the worker program there
//           | 'env=' NAME '=' VALUE                  set in the worker's environment there (ssh
//                                                    sends none of ours); a VALUE may hold ':'
//                                                    (a field not starting worker= or env=
//                                                    continues the one before)
//   GPUS   := N (',' N)*                             CUDA ordinals on that host, distinct
//
// e.g. `local`, `local:0,1`, `ssh:gpu-box:0,1`, `slurm:partition=a100,gpus=4,time=2:00:00`,
// `local:0;ssh:gpu-box:0`, `ssh:gpu-box:0:env=KWB_EXTENSION_CACHE=/scratch/kwb-ext`.

#include <QList>
#include <QString>

#include <optional>

namespace kwb {

struct WorkerTarget
{
    enum class Kind { Local, Ssh, Slurm };
    Kind kind = Kind::Local;
    /// ssh: the host as `ssh` is given it (an alias of ~/.ssh/config, user@host); slurm: the partition.
    QString host;
    /// local, ssh: the CUDA ordinal on that host; slurm: the slot (one srun step of one GPU each).
    int gpu = 0;
    /// slurm: srun's --time ("" for the partition's default).
    QString timeLimit;
    /// ssh, slurm: the worker program there (default kwb-worker, found in that host's PATH).
    QString remoteWorker = QStringLiteral("kwb-worker");
    /// ssh, slurm: "NAME=VALUE" set for the worker there, in the spec's order (the remote script
    /// exports them before it starts the worker).
    QStringList environment;

    bool isRemote() const { return kind != Kind::Local; }
    /// Where an evaluation ran, as runs record it: "local:0", "gpu-box:1", "slurm-a100:2".
    QString location() const;
    /// Its GPU lease key for remote targets (gpulease.h remoteGpuKey); local ones are leased by
    /// ordinal (GpuLeases::keyFor).
    QString leaseKey() const;

    static WorkerTarget local(int gpu);
    bool operator==(const WorkerTarget& other) const
    {
        return kind == other.kind && host == other.host && gpu == other.gpu && timeLimit == other.timeLimit &&
               remoteWorker == other.remoteWorker && environment == other.environment;
    }
};

/// The targets of a spec, in order; `local` without GPUs gives `defaultLocalGpus`. nullopt with
/// *error ("--workers: ssh:HOST:GPUS needs GPUs, e.g. ssh:gpu-box:0,1") for anything else.
std::optional<QList<WorkerTarget>> parseWorkerSpec(const QString& spec, const QList<int>& defaultLocalGpus,
                                                   QString* error);

} // namespace kwb

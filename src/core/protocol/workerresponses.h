#pragma once
// The worker's responses other than `evaluate` and `device` (docs/protocol.md §Requests) as
// values, and what every response carries (id, type, ok, error). Together with
// evaluationresult.h and devicefacts.h this is the one module that reads the protocol's keys:
// App, CLI, the run and the reports use these types only.

#include "core/protocol/devicefacts.h"
#include "core/protocol/evaluationresult.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

/// What every response has.
struct ResponseHeader
{
    QJsonValue id;
    QString type;
    bool ok = false;
    QString errorCode, errorMessage; ///< of an `ok: false` response
    /// false: the worker says its CUDA context is unusable (a sticky error; any response may say
    /// `"worker_healthy": false`) and exits after answering.
    bool workerHealthy = true;
};
ResponseHeader decodeHeader(const QJsonObject& response);

/// The request types this client knows the responses of.
enum class ResponseType {
    Unknown,
    Hello,
    Warm,
    Tasks,
    Device,
    Analyze,
    Profile,
    Compile,
    Evaluate,
    RunReference,
    Shutdown
};
/// From the response's `type`; Unknown for a type this build does not know (or none: a response
/// to a line that was not a request).
ResponseType responseType(const QJsonObject& response);

/// `hello`.
struct HelloInfo
{
    bool ok = false;
    std::optional<int> protocol;
    QString worker, torch, cudaRuntime, nvrtc, driver, tasksDir;
    int cudaDeviceCount = 0;
    /// The protocol profiles the worker knows, with their settings (empty from workers that do
    /// not announce them yet).
    QList<ProfileSettings> profiles;
    QString defaultProfile; ///< the one `evaluate` uses when a request names none (empty: not announced)
    /// `gpu_quiet_lock`: the GPU's quiet lock the worker holds its GPU work under (its path), empty
    /// where it holds none (null: no lock, or one it could not open) or says nothing of it (an
    /// older worker: quietLockAnnounced is false).
    QString quietLock;
    bool quietLockAnnounced = false;
    /// Not the hello answer's: set by the supervisor for a spare that was warmed before it took
    /// over, from its `warm` answer (WarmInfo::ms: ms per part, e.g. quiet_wait, context, cublas,
    /// cudnn, evaluator, total). Unset: not warmed (or an older worker that does not know `warm`).
    std::optional<QMap<QString, double>> warmMs;
    QJsonObject raw; ///< the hello answer as received

    bool warmed() const { return warmMs.has_value(); }

    QStringList profileNames() const;
    const ProfileSettings* profile(const QString& name) const;
    /// "unknown protocol profile 'x': the worker knows a, b", or an empty string when the worker
    /// knows the profile or announces none (an older worker: it refuses an unknown one itself).
    /// The one check of a profile name: clients keep no list of their own.
    QString unknownProfileError(const QString& name) const;
};
HelloInfo decodeHello(const QJsonObject& response);

/// `warm` (docs/protocol.md): what the worker's first-use costs took.
struct WarmInfo
{
    bool alreadyWarm = false; ///< a second warm in the same process: every part 0
    QString device;           ///< "none" where there is no usable device (then `why` says why)
    QString why;
    /// `warm_ms`, ms per part as the worker names them; unset where the answer has none.
    std::optional<QMap<QString, double>> ms;
};
WarmInfo decodeWarm(const QJsonObject& response);

/// A named dimension of a task, at both scales.
struct TaskDim
{
    QString name;
    qint64 full = 0;
    qint64 smoke = 0;
};

/// A forward argument or a parameter of a task.
struct TaskTensor
{
    QString name;
    QString kind;      ///< "tensor", "float" or "int"
    QString dtype;     ///< tensors only
    QString generator; ///< inputs: "rand" or "randn"
    QString init;      ///< parameters: "uniform_fan_in", "randn", …
    QStringList shape; ///< as written in the task file: dimension names or integers
    QList<qint64> full;
    QList<qint64> smoke;
    QJsonValue value; ///< a scalar input's value
    bool buffer = false;

    bool isTensor() const { return kind == QLatin1String("tensor"); }
};

/// One assignment of the dimensions at which correctness is checked (a `tasks` entry's
/// `shape_sets`): KernelBench's own shape ("kernelbench") first, then the task file's sets, the
/// held-out one (never shown in a prompt) last. A KernelBench-only task has none.
struct TaskShapeSet
{
    QString name;
    bool heldOut = false;
    QList<TaskDim> dims; ///< every dimension, at both scales
    /// "N=31, D=15": the dimensions whose value (at smoke or full scale) differs from `base`'s.
    QString differencesFrom(const QList<TaskDim>& base, bool smoke) const;
};

/// One entry of a `tasks` response: the task file as the worker read it.
struct TaskSpec
{
    QString id; ///< "L2/1"
    int level = 0;
    int number = 0;
    QString title;
    QString description;
    QString source;  ///< the KernelBench file the task re-expresses ("level2/1_Conv2D_ReLU_BiasAdd.py")
    QString forward; ///< the reference code: a TorchScript forward
    QString path;    ///< the task file the worker read
    QList<TaskDim> dims;
    QList<TaskTensor> inputs;
    QList<TaskTensor> params;
    QList<TaskShapeSet> shapeSets;
    std::optional<double> atol; ///< absent: the protocol profile's tolerance applies
    std::optional<double> rtol;
    /// Non-empty: the task has no TorchScript reference (its file's `kernelbench_only`, the
    /// converter's reason); it can be listed, never analysed or evaluated.
    QString kernelBenchOnly;
    /// KernelBench's constructor arguments (`init_inputs`): numbers, booleans, lists and
    /// {"dim": name} for a dimension (TaskDim::full at full scale).
    QJsonArray initInputs;
    /// KernelBench's problem file, where the task list carries it (KernelBench-only tasks).
    QString referencePython;
    /// The entry as the worker sent it: the prompt templates' context (RunTaskInput) renders it.
    QJsonObject json;

    bool isKernelBenchOnly() const { return !kernelBenchOnly.isEmpty(); }
};
TaskSpec decodeTaskSpec(const QJsonObject& task);

/// A task file the worker could not load (`errors` of the tasks response).
struct TaskLoadError
{
    QString path;
    QString field;
    QString message;
    QString toString() const;
};

/// `tasks`.
struct TaskList
{
    bool ok = false;
    QList<TaskSpec> tasks;
    QList<TaskLoadError> errors;
};
TaskList decodeTaskList(const QJsonObject& response);

/// One top-level op of a reference forward, as the worker's static analysis sees it.
struct TaskOp
{
    int index = 0;
    QString op;       ///< "aten::conv2d"
    QString category; ///< conv, matmul, elementwise, reduction, norm, pool, view, data, …
    QList<QList<qint64>> inputs;
    QList<qint64> output;
    int outputCount = 1; ///< outputs of the op (`output_count`, only sent when more than one)
    double flops = 0;
    double bytes = 0;
    int line = 0; ///< line of the forward it comes from (0: unknown)

    /// "conv2d" for "aten::conv2d".
    QString shortName() const;
};

/// An op of an `analyze` response the worker could not count (`uncounted`, docs/protocol.md).
struct UncountedOp
{
    int index = -1;          ///< its entry in `ops`
    QString op;              ///< "aten::kthvalue"
    int line = 0;            ///< line of the forward (0: unknown)
    QString reason;          ///< why: no rule for the op, or an input of unknown shape
    bool shapeKnown = false; ///< its output shapes are known (so are its bytes; its FLOPs are not)
};

/// An `analyze` response: FLOPs and HBM bytes from shapes alone.
struct AnalyzeResult
{
    QString task;
    QString scale;
    bool failed = false;  ///< the response carried an `error` (the analysis failed)
    QString errorMessage; ///< its message
    bool hasOps = false;  ///< the response carried an `ops` list
    QList<TaskOp> ops;
    QList<qint64> outputShape;
    bool hasOutputShape = false;
    bool hasTotals = false; ///< the response carried `flops` (a failed analysis does not)
    double flops = 0;
    double bytesUnfused = 0; ///< every op reads its inputs from and writes its output to HBM
    bool hasBytesUnfused = false;
    double bytesFused = 0; ///< inputs, parameters and output once: the least any kernel moves
    /// bytes_fused split into the task's inputs, parameters and output (newer workers only).
    std::optional<double> inputBytes, paramBytes, outputBytes;
    /// `bound_flops`: the FLOPs an evaluation's roofline floor counts (the matmuls, each conv's
    /// channel contraction: what every implementation computes); unset from an older worker.
    std::optional<double> boundFlops;
    double intensityUnfused = 0;
    double intensityFused = 0;
    int opCount = 0; ///< from the response; equals ops.size() when the ops are listed
    /// Ops the worker could not count: flops and bytes leave them out, so the totals are a lower
    /// bound and no roofline point may be drawn from them. Empty from a worker without the field.
    QList<UncountedOp> uncounted;

    /// Every op counted: the totals are the task's.
    bool complete() const { return uncounted.isEmpty(); }
    /// "cannot count: aten::X, aten::Y" (each op once, in order); empty when complete.
    QString uncountedText() const;
};
/// Intensities the response lacks are computed from flops and bytes (older golden files carry
/// only the totals).
AnalyzeResult decodeAnalyze(const QJsonObject& response);

/// `profile`: CUPTI kernel activity of the eager reference.
struct ProfileOp
{
    int index = -1; ///< -1: launched outside any top-level op
    QString op;
    double timeNs = 0;
    double share = 0; ///< of total_ns, 0..1
    int kernels = 0;
};
struct ProfileKernel
{
    QString name;
    QString op;
    int opIndex = -1; ///< -1: launched outside any op
    int calls = 0;
    double timeNs = 0;
    double share = 0;
};
struct ProfileResult
{
    std::optional<double> totalNs;
    QList<ProfileOp> ops;
    QList<ProfileKernel> kernels;
};
ProfileResult decodeProfile(const QJsonObject& response);

/// `run_reference`.
struct ReferenceRun
{
    QList<qint64> outputShape;
    QString dtype;
    std::optional<double> min, max, mean, ms;
    bool finite = false;
};
ReferenceRun decodeReferenceRun(const QJsonObject& response);

} // namespace kwb

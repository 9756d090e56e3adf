#pragma once
// The requests of docs/protocol.md §Requests, built in one place: pages, commands and core's run
// code say what they ask for in typed fields and never write a request's keys themselves (issue 34
// item 2). A field left at its default is left out of the line, so the worker applies its own
// default (docs/protocol.md), as it did when each caller wrote the object by hand. The supervisor
// adds the id; the golden requests under tests/protocol/ pin what these build.

#include <QJsonObject>
#include <QString>

#include <optional>

namespace kwb::WorkerRequests {

/// `hello`: the handshake (the supervisor's, with an id of its own).
QJsonObject hello();
/// `warm`: the CUDA context and the libraries' first calls; with python, the embedded Python too.
QJsonObject warm(bool python);
/// The type a request names ("" for none): the supervisor's one read of a request it queues.
QString typeOf(const QJsonObject& request);

/// `tasks`: every task the worker reads from tasksDir (empty: the worker's own).
QJsonObject tasks(const QString& tasksDir = QString());
/// `device`: the GPU's facts; with ceilings, also its measured ceilings (runs kernels for seconds).
QJsonObject device(bool ceilings = false);
/// `analyze`: the reference's ops with FLOPs and bytes at a scale ("full", "smoke").
QJsonObject analyze(const QString& task, const QString& scale);
/// `profile`: the reference's CUPTI kernel times over `trials` runs.
QJsonObject profile(const QString& task, const QString& scale, int trials);

/// `compile` of a whole answer (the compile-ahead of an evaluation).
struct Compile
{
    QString answer;
    QString arch;             ///< "sm_90"
    bool returnCubin = false; ///< send the module back (base64), to hand to the evaluation
    QString answerFormat;     ///< empty: the worker's default (native)
    QString codeBlock;        ///< empty: the worker's default (first)
};
QJsonObject compile(const Compile& request);

/// A module compiled ahead (`compile` with return_cubin) that an evaluation loads instead of
/// compiling: the worker loads it only for the source whose hash it names (docs/protocol.md).
struct CompiledModule
{
    QString cubinB64;
    QString arch;       ///< the arch it was built for ("sm_90")
    QString sourceHash; ///< the worker's hash of the source it was built from
    QString compileLog;
    /// The compile response's kernel_facts and kernel_facts_note (kernelFactsOf), handed on as
    /// `cubin_kernel_facts` so the GPU worker does not read them again; empty: none.
    QJsonObject kernelFacts;
};

/// A compile response's `kernel_facts` and `kernel_facts_note`, as an object of those two keys;
/// empty where it has no facts.
QJsonObject kernelFactsOf(const QJsonObject& compileResponse);

/// `evaluate` of one answer.
struct Evaluate
{
    QString task;
    QString answer;
    QString profile;         ///< empty: the worker's default profile
    QString scale;           ///< empty: the worker's default (full)
    std::optional<int> seed; ///< unset: the worker's
    int timingTrials = 0;    ///< 0: the profile's
    QString answerFormat;    ///< empty: the worker's default (native)
    QString codeBlock;       ///< empty: the worker's default (first)
    QString arch;            ///< empty: the device's
    QString device;          ///< "none", "cpu" or empty (the GPU)
    bool profileTraffic = false;
    std::optional<CompiledModule> module; ///< set by EvaluationQueue, from its compile ahead
};
QJsonObject evaluate(const Evaluate& request);

} // namespace kwb::WorkerRequests

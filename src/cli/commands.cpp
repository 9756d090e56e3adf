#include "commands.h"

#include "evalkernels.h"
#include "textformat.h"

#include "core/protocol/kernelfacts.h"
#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponses.h"
#include "core/store/runstore.h"
#include "core/study/report.h"
#include "core/study/reportformat.h"
#include "core/workers/gpulease.h"
#include "core/workers/gpumemoryelsewhere.h"
#include "core/workers/memorycgroup.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workerlocator.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTextStream>

#include <cmath>
#include <limits>

namespace kwb::cli {

// One stream per descriptor for the whole program: two buffered streams on stdout would
// interleave their output out of order.
QTextStream& out()
{
    static QTextStream stream(stdout);
    return stream;
}

QTextStream& err()
{
    static QTextStream stream(stderr);
    return stream;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kStderrLinesShown = 20;

void printJson(const QJsonObject& object)
{
    out() << QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Indented));
    out().flush();
}

QJsonValue numberOrNull(double value)
{
    return std::isnan(value) ? QJsonValue(QJsonValue::Null) : QJsonValue(value);
}

QString lastLines(const QByteArray& log, int count)
{
    QList<QByteArray> lines = log.trimmed().split('\n');
    if (lines.size() == 1 && lines.first().isEmpty())
        return {};
    if (lines.size() > count)
        lines = lines.mid(lines.size() - count);
    QString text;
    for (const QByteArray& line : lines)
        text += QStringLiteral("  ") + QString::fromUtf8(line) + QLatin1Char('\n');
    return text;
}

void printWorkerStderr(const WorkerSupervisor::Outcome& outcome)
{
    const QString tail = lastLines(outcome.stderrTail, kStderrLinesShown);
    if (!tail.isEmpty())
        err() << "worker stderr (last lines):\n" << tail;
}

/// Exit code and message for a request that did not get a usable response, printed on stderr
/// (and as JSON on stdout when asked). Returns ExitSuccess when the response is usable.
int reportFailure(const WorkerSupervisor::Outcome& outcome, bool json)
{
    if (outcome.hasResponse() && outcome.response.ok())
        return ExitSuccess;
    QString status;
    QString message;
    int code;
    if (!outcome.hasResponse()) {
        status = outcome.status;
        message = outcome.message;
        code = evaluationStatusFromWire(status) == EvaluationStatus::BadRequest ? ExitBadRequest : ExitWorker;
    } else {
        const ResponseHeader& header = outcome.response.header;
        status = header.errorCode;
        message = header.errorMessage;
        // The worker refused the request (unknown task, bad field, no device for it): the
        // caller's mistake. `internal` is the worker's own.
        code = status == QLatin1String("internal") ? ExitWorker : ExitBadRequest;
    }
    if (json) {
        QJsonObject object{{QStringLiteral("ok"), false},
                           {QStringLiteral("error"),
                            QJsonObject{{QStringLiteral("code"), status}, {QStringLiteral("message"), message}}}};
        if (!outcome.stderrTail.isEmpty())
            object.insert(QStringLiteral("worker_stderr"), QString::fromUtf8(outcome.stderrTail));
        printJson(object);
    }
    err() << "kwb: " << status << ": " << message << '\n';
    if (code == ExitWorker)
        printWorkerStderr(outcome);
    err().flush();
    return code;
}

/// An intensity the decoder gave (from the response, or flops / bytes); NaN where neither is known.
double knownIntensity(double intensity, double bytes)
{
    return bytes > 0 || intensity != 0 ? intensity : kNaN;
}

QString intensity(double value)
{
    return std::isnan(value) ? QStringLiteral("-")
                             : QString::number(value, 'f', value < 10 ? 2 : 1) + QStringLiteral(" FLOP/B");
}

/// A device fact for a table: NaN (shown "-") where the response has none.
double known(double value)
{
    return value > 0 ? value : kNaN;
}

QJsonValue optionalJson(const std::optional<double>& value)
{
    return value ? QJsonValue(*value) : QJsonValue(QJsonValue::Undefined);
}

QJsonValue shapeJson(const QList<qint64>& shape)
{
    QJsonArray array;
    for (const qint64 d : shape)
        array.append(double(d));
    return array;
}

} // namespace

int commandFailed(const char* command, bool json, int code, const QString& errorCode, const QString& message)
{
    err() << "kwb " << command << ": " << message << '\n';
    err().flush();
    if (json) {
        out() << QString::fromUtf8(
            QJsonDocument(QJsonObject{{QStringLiteral("ok"), false},
                                      {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), errorCode},
                                                                            {QStringLiteral("message"), message}}}})
                .toJson(QJsonDocument::Indented));
        out().flush();
    }
    return code;
}

bool openRunStore(RunStore& store, const char* command, const QString& path, OpenOptions::Access access,
                  QString* message)
{
    if (store.open(path, OpenOptions{access, false})) {
        if (const QString note = store.openNote(); !note.isEmpty()) {
            err() << "kwb " << command << ": " << note << '\n';
            err().flush();
        }
        return true;
    }
    // RunStore says what the file is; the command line says what to do instead.
    QString text = store.errorString();
    switch (store.file().kind) {
    case StoreFile::Kind::Empty:
        text +=
            QStringLiteral(" kwb makes a new run store where no file is: delete the empty file, or give --db another "
                           "path.");
        break;
    case StoreFile::Kind::Foreign:
    case StoreFile::Kind::NotSQLite:
    case StoreFile::Kind::Damaged:
    case StoreFile::Kind::Newer:
        text += QStringLiteral(" To start a new run store, give --db a path where no file is (kwb run, kwb import).");
        break;
    case StoreFile::Kind::Current:
    case StoreFile::Kind::Older:
        if (store.file().readOnly && access == OpenOptions::Access::Write)
            text +=
                QStringLiteral(" Give --db a file that may be written, in a folder that may be (kwb report reads this "
                               "one as it is).");
        break;
    case StoreFile::Kind::Missing:
    case StoreFile::Kind::Unreadable: break;
    }
    if (message)
        *message = text;
    return false;
}

void warnWithoutSandbox(const WorkerSupervisor& supervisor)
{
    const QString warning = sandboxWarning(supervisor.sandboxStatus());
    if (warning.isEmpty())
        return;
    err() << "kwb: warning: " << warning << '\n';
    err().flush();
}

Session::Session(GlobalOptions options)
    : m_options(std::move(options))
{
    m_supervisor.setIsolation(WorkerSupervisor::Isolation::FreshPerRequest);
    // One command, at most one evaluation: a spare would only load libtorch beside the candidate
    // and be killed at exit.
    m_supervisor.setSpareWorker(false);
}

int Session::locateWorker(bool json)
{
    const WorkerLocator::Result found = WorkerLocator::locate(m_options.worker);
    if (!found.found()) {
        if (json)
            printJson(QJsonObject{
                {QStringLiteral("ok"), false},
                {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), QStringLiteral("start_failed")},
                                                      {QStringLiteral("message"), found.error}}}});
        err() << "kwb: " << found.error << '\n';
        err().flush();
        return ExitWorker;
    }
    QStringList arguments;
    if (!m_options.tasksDir.isEmpty())
        arguments << QStringLiteral("--tasks-dir") << m_options.tasksDir;
    m_supervisor.setProgram(found.program, arguments);
    return ExitSuccess;
}

int runTasks(Session& session, bool json)
{
    const WorkerSupervisor::Outcome outcome =
        session.supervisor().run(WorkerRequests::tasks(session.options().tasksDir));
    if (const int code = reportFailure(outcome, json))
        return code;
    const TaskList list = outcome.response.tasks.value_or(TaskList());
    if (json) {
        QJsonArray tasks, errors;
        for (const TaskSpec& task : list.tasks)
            tasks.append(task.json);
        for (const TaskLoadError& e : list.errors)
            errors.append(QJsonObject{{QStringLiteral("path"), e.path},
                                      {QStringLiteral("field"), e.field},
                                      {QStringLiteral("message"), e.message}});
        printJson(QJsonObject{
            {QStringLiteral("ok"), true}, {QStringLiteral("tasks"), tasks}, {QStringLiteral("errors"), errors}});
        return ExitSuccess;
    }
    TextTable table(
        {QStringLiteral("ID"), QStringLiteral("LEVEL"), QStringLiteral("TITLE"), QStringLiteral("DIMENSIONS")});
    table.setRightAligned(1);
    const QList<TaskSpec>& tasks = list.tasks;
    int kernelBenchOnly = 0;
    for (const TaskSpec& task : tasks) {
        QStringList dims;
        for (const TaskDim& d : task.dims)
            dims << d.name + QLatin1Char('=') + numberOrDash(double(d.full), 10);
        // No dimensions of its own: how it is evaluated, and why, stand in their place.
        const QString& only = task.kernelBenchOnly;
        kernelBenchOnly += only.isEmpty() ? 0 : 1;
        table.addRow({task.id, numberOrDash(task.level), task.title,
                      only.isEmpty()
                          ? dims.join(QLatin1Char(' '))
                          : QStringLiteral("KernelBench format only (reference: KernelBench's Model): ") + only});
    }
    out() << table.render();
    const QList<TaskLoadError>& errors = list.errors;
    out() << '\n' << tasks.size() << (tasks.size() == 1 ? " task" : " tasks");
    if (kernelBenchOnly > 0)
        out() << " (" << kernelBenchOnly << " evaluated in KernelBench's answer format only)";
    if (!errors.isEmpty())
        out() << ", " << errors.size() << (errors.size() == 1 ? " broken file" : " broken files");
    out() << '\n';
    for (const TaskLoadError& error : errors)
        out() << "  " << error.path << ": " << error.field << ": " << error.message << '\n';
    out().flush();
    return ExitSuccess;
}

int runAnalyze(Session& session, const AnalyzeOptions& options)
{
    const WorkerSupervisor::Outcome outcome =
        session.supervisor().run(WorkerRequests::analyze(options.task, options.scale));
    if (const int code = reportFailure(outcome, options.json))
        return code;
    QJsonObject response = outcome.response.raw; // printed as it came with --json
    const AnalyzeResult a = outcome.response.analyze.value_or(AnalyzeResult());
    const double flops = a.flops;
    const double unfused = a.bytesUnfused;
    const double fused = a.bytesFused;
    const double intensityUnfused = knownIntensity(a.intensityUnfused, unfused);
    const double intensityFused = knownIntensity(a.intensityFused, fused);
    if (options.json) {
        response.remove(QStringLiteral("id"));
        response.remove(QStringLiteral("type"));
        // The decoder computes what older workers left out; the raw response is printed with it.
        response.insert(QStringLiteral("intensity_unfused"), numberOrNull(intensityUnfused));
        response.insert(QStringLiteral("intensity_fused"), numberOrNull(intensityFused));
        printJson(response);
        return ExitSuccess;
    }
    KeyValueList summary;
    summary.add(QStringLiteral("task"), (a.task.isEmpty() ? options.task : a.task) + QStringLiteral(" (scale ") +
                                            (a.scale.isEmpty() ? options.scale : a.scale) + QLatin1Char(')'));
    summary.add(QStringLiteral("output"), shape(shapeJson(a.outputShape)));
    summary.add(QStringLiteral("FLOPs"), siValue(flops, QStringLiteral("FLOP")));
    summary.add(QStringLiteral("bytes unfused"),
                siValue(unfused, QStringLiteral("B")) +
                    QStringLiteral("  (every op reads its inputs and writes its output)"));
    summary.add(QStringLiteral("bytes fused"),
                siValue(fused, QStringLiteral("B")) + QStringLiteral("  (task inputs, parameters and outputs only)"));
    summary.add(QStringLiteral("intensity"), intensity(intensityUnfused) + QStringLiteral(" unfused, ") +
                                                 intensity(intensityFused) + QStringLiteral(" fused"));
    out() << summary.render() << '\n';

    TextTable ops({QStringLiteral("#"), QStringLiteral("OP"), QStringLiteral("CATEGORY"), QStringLiteral("OUTPUT"),
                   QStringLiteral("FLOPS"), QStringLiteral("BYTES"), QStringLiteral("FLOP/B")});
    for (int column : {0, 4, 5, 6})
        ops.setRightAligned(column);
    for (const TaskOp& op : a.ops) {
        const double opFlops = op.flops;
        const double opBytes = op.bytes;
        ops.addRow({numberOrDash(op.index), op.op, op.category, shape(shapeJson(op.output)),
                    std::isnan(opFlops) ? QStringLiteral("-") : siValue(opFlops, QStringLiteral("FLOP")),
                    std::isnan(opBytes) ? QStringLiteral("-") : siValue(opBytes, QStringLiteral("B")),
                    opBytes > 0 ? QString::number(opFlops / opBytes, 'f', 2) : QStringLiteral("-")});
    }
    out() << ops.render();
    out().flush();
    return ExitSuccess;
}

int runEval(Session& session, const EvalOptions& options)
{
    QFile file(options.candidateFile);
    if (!file.open(QIODevice::ReadOnly)) {
        err() << "kwb: cannot read candidate " << options.candidateFile << ": " << file.errorString() << '\n';
        err().flush();
        return ExitUsage;
    }
    const QString answer = QString::fromUtf8(file.readAll());

    WorkerRequests::Evaluate evaluate;
    evaluate.task = options.task;
    evaluate.answer = answer;
    evaluate.profile = options.profile;
    evaluate.scale = options.scale;
    evaluate.timingTrials = options.trials;
    evaluate.answerFormat = options.answerFormat;
    evaluate.arch = options.arch;
    evaluate.device = options.device;
    evaluate.profileTraffic = options.profileTraffic;

    const int timeoutMs = int(std::lround(options.timeoutS * 1000.0));
    // The profile is checked against the worker's own table (its hello), not a list of the CLI's.
    HelloInfo hello;
    const QMetaObject::Connection helloConnection =
        QObject::connect(&session.supervisor(), &WorkerSupervisor::workerAvailable,
                         [&hello](qint64, const HelloInfo& announced) { hello = announced; });
    // One owner per GPU (core/workers/gpulease.h): no other kwb or window job times on it meanwhile.
    const bool onGpu = options.device != QLatin1String("none") && options.device != QLatin1String("cpu");
    const WorkerTarget target = session.supervisor().target(); // --workers: one GPU, here or remote
    const QString holder =
        QStringLiteral("kwb eval %1 (pid %2)").arg(options.task).arg(QCoreApplication::applicationPid());
    const qint64 lease = !onGpu              ? 0
                         : target.isRemote() ? GpuLeases::instance()->acquireKey(target.leaseKey(), -1, holder)
                                             : GpuLeases::instance()->acquire(0, holder);
    const WorkerSupervisor::Outcome outcome = session.supervisor().run(WorkerRequests::evaluate(evaluate), timeoutMs);
    GpuLeases::instance()->release(lease);
    QObject::disconnect(helloConnection);
    if (outcome.hasResponse() && !outcome.response.ok()) {
        // The worker refused the request: an unknown profile is a usage error, named plainly.
        if (const QString problem = hello.unknownProfileError(options.profile); !problem.isEmpty()) {
            if (options.json)
                printJson(QJsonObject{
                    {QStringLiteral("ok"), false},
                    {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), QStringLiteral("bad_profile")},
                                                          {QStringLiteral("message"), problem}}}});
            err() << "kwb: " << problem << '\n';
            err().flush();
            return ExitUsage;
        }
    }

    // A timeout or a crash is the candidate's result, like a compile error; a worker that cannot
    // start, or a refused request, is not.
    const EvaluationStatus failure = evaluationStatusFromWire(outcome.status);
    const bool candidateFailure =
        !outcome.hasResponse() && (failure == EvaluationStatus::Timeout || failure == EvaluationStatus::Crashed ||
                                   failure == EvaluationStatus::ResourceLimit);
    if (!candidateFailure) {
        if (const int code = reportFailure(outcome, options.json))
            return code;
    }

    // Out of memory for memory other processes held is the machine's, as the queue judges it
    // (core/workers/gpumemoryelsewhere.h): `eval` evaluates once, so it says so and stops there.
    if (!candidateFailure && outcome.response.evaluation && outcome.response.evaluation->gpuOutOfMemory &&
        !target.isRemote()) {
        const EvaluationResult& r = *outcome.response.evaluation;
        const MemoryElsewhere elsewhere =
            probeMemoryElsewhere(r.gpuOutOfMemory->pciBusId, session.supervisor().answeringWorkerPid());
        if (judgeOutOfMemory(r, elsewhere) == OutOfMemoryFault::Machines) {
            WorkerSupervisor::Outcome machine;
            machine.status = wireName(EvaluationStatus::OutOfMemoryElsewhere);
            machine.message = describeOutOfMemoryElsewhere(r, elsewhere) +
                              QStringLiteral(" (evaluate it again once the GPU is free)");
            machine.stderrTail = outcome.stderrTail;
            return reportFailure(machine, options.json);
        }
    }

    const QJsonObject& response = outcome.response.raw; // printed as it came with --json
    const EvaluationResult e = candidateFailure ? failureEvaluation(outcome.status, outcome.message)
                                                : outcome.response.evaluation.value_or(EvaluationResult());
    const QString status = e.statusName;
    const QString message = e.message;
    const QString compileLog = e.compile ? e.compile->log : QString();
    const double speedup = e.speedup.value_or(kNaN);
    const double maxAbsDiff = e.correctness && e.correctness->maxAbsDiff ? *e.correctness->maxAbsDiff : kNaN;
    const int exitCode = e.isCorrect() ? ExitSuccess : ExitNotCorrect;
    // Each kernel placed by the work it did (issue 40) needs the task's analysis: asked only where
    // the trace saw launches, so a GPU ran the candidate.
    KernelPlacement placement;
    if (!e.launches.isEmpty()) {
        const WorkerSupervisor::Outcome analysis =
            session.supervisor().run(WorkerRequests::analyze(options.task, options.scale));
        if (analysis.hasResponse() && analysis.response.analyze)
            placement = kernelPlacement(*analysis.response.analyze, e);
        else
            placement.reason = QStringLiteral("the task's analysis failed: ") + analysis.message;
    }

    if (options.json) {
        QJsonObject result{
            {QStringLiteral("ok"), true},
            {QStringLiteral("task"), options.task},
            {QStringLiteral("candidate"), options.candidateFile},
            {QStringLiteral("status"), status},
            {QStringLiteral("stage"),
             candidateFailure || e.stage.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(e.stage)},
            {QStringLiteral("message"), message},
            {QStringLiteral("compile_log"), compileLog},
            {QStringLiteral("speedup"), numberOrNull(speedup)},
            {QStringLiteral("speedup_low"), numberOrNull(e.timing.interval ? e.timing.interval->low : kNaN)},
            {QStringLiteral("speedup_high"), numberOrNull(e.timing.interval ? e.timing.interval->high : kNaN)},
            {QStringLiteral("max_abs_diff"), numberOrNull(maxAbsDiff)},
            {QStringLiteral("reference_ms"), numberOrNull(e.timing.reference ? e.timing.reference->meanMs : kNaN)},
            {QStringLiteral("candidate_ms"), numberOrNull(e.timing.candidate ? e.timing.candidate->meanMs : kNaN)},
            {QStringLiteral("dram_bytes"), numberOrNull(e.measuredDramBytes().value_or(kNaN))},
            {QStringLiteral("kernel_work"), kernelWorkJson(e, placement)},
            {QStringLiteral("profile"), options.profile},
            {QStringLiteral("scale"), options.scale},
            {QStringLiteral("timeout_s"), options.timeoutS},
            {QStringLiteral("worker_stderr"), QString::fromUtf8(outcome.stderrTail)},
            {QStringLiteral("worker_stderr_dropped_bytes"), outcome.stderrDroppedBytes},
            {QStringLiteral("response"), candidateFailure ? QJsonValue(QJsonValue::Null) : QJsonValue(response)}};
        printJson(result);
        return exitCode;
    }

    KeyValueList table;
    table.add(QStringLiteral("status"), status);
    table.add(QStringLiteral("task"), options.task + QStringLiteral("  (profile ") + options.profile +
                                          QStringLiteral(", scale ") + options.scale + QLatin1Char(')'));
    if (!candidateFailure)
        table.add(QStringLiteral("stage"), e.stage);
    if (!message.isEmpty())
        table.add(QStringLiteral("message"), message);
    if (const std::optional<CompileInfo>& compile = e.compile) {
        QString line = compile->ok ? QStringLiteral("ok") : QStringLiteral("failed");
        if (compile->ms)
            line += QStringLiteral(" in ") + milliseconds(*compile->ms);
        if (!compile->arch.isEmpty())
            line += QStringLiteral(" for ") + compile->arch;
        QStringList kernels = compile->kernels;
        // A terminal line, not a dump: an answer may declare thousands of kernels.
        constexpr int shownKernels = 8;
        if (kernels.size() > shownKernels) {
            const qsizetype more = kernels.size() - shownKernels;
            kernels = kernels.mid(0, shownKernels);
            kernels << QStringLiteral("… and %1 more").arg(more);
        }
        if (!kernels.isEmpty())
            line += QStringLiteral(", kernels: ") + kernels.join(QStringLiteral(", "));
        table.add(QStringLiteral("compile"), line);
        // Each kernel's facts in one line (issue 40; the same reading the Monitor shows), as many
        // as the kernel list above names.
        for (qsizetype i = 0; i < compile->kernelFacts.size() && i < shownKernels; ++i) {
            const KernelFactsInfo& kernel = compile->kernelFacts.at(i);
            table.add(QStringLiteral("kernel"), kernel.displayName() + QStringLiteral(": ") + kernelReading(kernel));
        }
        if (compile->kernelFacts.size() > shownKernels)
            table.add(QStringLiteral("kernel"),
                      QStringLiteral("… and %1 more").arg(compile->kernelFacts.size() - shownKernels));
        if (!compile->kernelFactsNote.isEmpty())
            table.add(QStringLiteral("kernel facts"), compile->kernelFactsNote);
    }
    if (const std::optional<CorrectnessInfo>& c = e.correctness) {
        table.add(QStringLiteral("correctness"),
                  QStringLiteral("%1/%2 trials passed, max abs diff %3, max rel diff %4 (atol %5, rtol %6)")
                      .arg(numberOrDash(c->passed), numberOrDash(c->trials),
                           numberOrDash(optionalJson(c->maxAbsDiff), 3), numberOrDash(optionalJson(c->maxRelDiff), 3),
                           numberOrDash(optionalJson(c->atol), 3), numberOrDash(optionalJson(c->rtol), 3)));
    }
    const auto timingLine = [](const TimingStats& t) {
        return milliseconds(t.meanMs) + QStringLiteral(" mean  (median ") + milliseconds(t.medianMs) +
               QStringLiteral(", std ") + milliseconds(t.stdMs) + QStringLiteral(", ") + numberOrDash(t.trials) +
               QStringLiteral(" trials)");
    };
    if (e.timing.reference)
        table.add(QStringLiteral("reference"), timingLine(*e.timing.reference));
    if (e.timing.candidate)
        table.add(QStringLiteral("candidate"), timingLine(*e.timing.candidate));
    if (const QString method = formatTimingMethod(e.timing); !method.isEmpty())
        table.add(QStringLiteral("timing"), method);
    if (!std::isnan(speedup))
        table.add(QStringLiteral("speedup"), formatSpeedup(speedup, e.timing.interval));
    if (const QString traffic = formatTraffic(e.traffic); !traffic.isEmpty())
        table.add(QStringLiteral("traffic"), traffic);
    addKernelRows(table, e, placement);
    if (e.torchOnly)
        table.add(QStringLiteral("note"), QStringLiteral("torch-only: the candidate launched no custom kernel"));
    for (const EvaluationNote& note : e.notes)
        table.add(QStringLiteral("note"), note.code + QStringLiteral(": ") + note.message);
    if (e.degenerate)
        table.add(QStringLiteral("warning"), QStringLiteral("degenerate reference (") + e.degenerate->kind +
                                                 QStringLiteral("): ") + e.degenerate->message);
    out() << table.render();
    if (!compileLog.isEmpty())
        out() << "\ncompile log:\n" << compileLog << (compileLog.endsWith(QLatin1Char('\n')) ? "" : "\n");
    out().flush();
    if (candidateFailure)
        printWorkerStderr(outcome);
    err().flush();
    return exitCode;
}

int runDevice(Session& session, bool json, bool ceilings)
{
    // The ceilings run kernels on the GPU: not while another job times there (core/workers/gpulease.h).
    const qint64 lease =
        ceilings ? GpuLeases::instance()->acquire(
                       0, QStringLiteral("kwb device --ceilings (pid %1)").arg(QCoreApplication::applicationPid()))
                 : 0;
    const WorkerSupervisor::Outcome outcome = session.supervisor().run(WorkerRequests::device(ceilings));
    GpuLeases::instance()->release(lease);
    if (const int code = reportFailure(outcome, json))
        return code;
    // How this host isolates its workers, beside the GPU they see: what a run would record
    // (docs/security.md), so a user can check a new machine before a study.
    const QString sandbox = session.supervisor().sandboxStatus();
    const QString memoryCgroup = memoryCgroupStatus();
    QJsonObject response = outcome.response.raw; // printed as it came with --json
    // What other processes hold of a local GPU (a model server beside the evaluations): what a
    // candidate's out-of-memory would be judged against (core/workers/gpumemoryelsewhere.h).
    const bool local = !session.supervisor().target().isRemote() &&
                       response.value(QLatin1String(ProtocolNames::Key::kPciBusId)).isString();
    const MemoryElsewhere elsewhere =
        local ? probeMemoryElsewhere(response.value(QLatin1String(ProtocolNames::Key::kPciBusId)).toString(),
                                     session.supervisor().answeringWorkerPid())
              : MemoryElsewhere{};
    if (json) {
        response.remove(QStringLiteral("id"));
        response.remove(QStringLiteral("type"));
        QJsonObject hostJson{{QStringLiteral("sandbox"), sandbox}, {QStringLiteral("memory_cgroup"), memoryCgroup}};
        if (local)
            hostJson.insert(QStringLiteral("gpu_memory_elsewhere"),
                            elsewhere.known ? QJsonObject{{QStringLiteral("bytes"), elsewhere.bytes},
                                                          {QStringLiteral("holders"),
                                                           QJsonArray::fromStringList(elsewhere.holders)}}
                                            : QJsonObject{{QStringLiteral("unknown"), elsewhere.why}});
        response.insert(QStringLiteral("host"), hostJson);
        printJson(response);
        return ExitSuccess;
    }
    const DeviceFacts device = outcome.response.device.value_or(DeviceFacts());
    KeyValueList host;
    host.add(QStringLiteral("worker sandbox"), sandbox);
    host.add(QStringLiteral("memory cgroup"), memoryCgroup);
    if (!device.available) {
        out() << "no GPU: " << (device.reason.isEmpty() ? QStringLiteral("no reason given") : device.reason) << '\n'
              << host.render();
        out().flush();
        return ExitSuccess;
    }
    KeyValueList table;
    table.add(QStringLiteral("GPU"), device.name);
    table.add(QStringLiteral("compute capability"), device.cc + QStringLiteral(" (") + device.arch + QLatin1Char(')'));
    table.add(QStringLiteral("SMs"), numberOrDash(device.smCount));
    table.add(QStringLiteral("L2 cache"), siValue(known(double(device.l2Bytes)), QStringLiteral("B")));
    table.add(QStringLiteral("memory"), siValue(known(double(device.memoryBytes)), QStringLiteral("B")));
    if (local)
        table.add(QStringLiteral("held by other processes"), summarizeMemoryElsewhere(elsewhere));
    table.add(QStringLiteral("SM clock"), siValue(known(device.smClockKhz * 1e3), QStringLiteral("Hz")));
    table.add(QStringLiteral("memory clock"), siValue(known(device.memoryClockKhz * 1e3), QStringLiteral("Hz")));
    table.add(QStringLiteral("HBM (theoretical)"),
              siValue(known(device.hbmTheoreticalGBps * 1e9), QStringLiteral("B/s")));
    if (device.hasCeilings) {
        table.add(QStringLiteral("HBM copy (measured)"),
                  siValue(known(device.hbmCopy.value * 1e9), QStringLiteral("B/s")));
        table.add(QStringLiteral("FP32 FMA (measured)"),
                  siValue(known(device.fp32Fma.value * 1e9), QStringLiteral("FLOP/s")));
        if (device.tensorBf16.present())
            table.add(QStringLiteral("BF16 tensor (measured)"),
                      siValue(known(device.tensorBf16.value * 1e9), QStringLiteral("FLOP/s")));
        if (device.tensorTf32.present())
            table.add(QStringLiteral("TF32 tensor (measured)"),
                      siValue(known(device.tensorTf32.value * 1e9), QStringLiteral("FLOP/s")));
    }
    out() << table.render() << host.render();
    out().flush();
    return ExitSuccess;
}

int runReport(const ReportCommandOptions& options)
{
    const bool json = options.format == QLatin1String("json");
    const auto refuse = [json](const QString& code, const QString& message) {
        err() << "kwb report: " << message << '\n';
        err().flush();
        if (json) {
            printJson({{QStringLiteral("ok"), false},
                       {QStringLiteral("error"),
                        QJsonObject{{QStringLiteral("code"), code}, {QStringLiteral("message"), message}}}});
        }
        return ExitBadRequest;
    };

    QList<qint64> runIds;
    if (!options.runs.trimmed().isEmpty()) {
        for (const QString& part : options.runs.split(QLatin1Char(','))) {
            bool ok = false;
            const qint64 id = part.trimmed().toLongLong(&ok);
            if (!ok || id <= 0) {
                err() << "kwb report: --runs: expected run ids separated by commas, got \"" << options.runs << "\"\n";
                return ExitUsage;
            }
            if (!runIds.contains(id))
                runIds.append(id);
        }
    }

    // RunStore::open creates a missing file: a report must not. Anything else that is not a run
    // store is refused as it is (RunStore says what it is); a read-only one is read as it is.
    if (!QFileInfo::exists(options.database))
        return refuse(QStringLiteral("bad_database"), QStringLiteral("no such database: %1").arg(options.database));
    RunStore store;
    QString why;
    if (!openRunStore(store, "report", options.database, OpenOptions::Access::Auto, &why))
        return refuse(QStringLiteral("bad_database"), why);

    QString error;
    const std::optional<Report> report = buildReport(store, runIds, ReportOptions{}, &error);
    if (!report)
        return refuse(QStringLiteral("unknown_run"), error);

    QString text;
    if (options.format == QLatin1String("csv")) {
        text = reportCsv(*report);
    } else if (json) {
        QJsonObject object = reportJson(*report);
        object.insert(QStringLiteral("ok"), true);
        text = QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Indented));
    } else {
        text = reportMarkdown(*report);
    }

    if (options.outFile.isEmpty()) {
        out() << text;
        out().flush();
        return ExitSuccess;
    }
    QFile file(options.outFile);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(text.toUtf8()) < 0 || !file.flush()) {
        err() << "kwb report: cannot write " << options.outFile << ": " << file.errorString() << '\n';
        return ExitUsage;
    }
    return ExitSuccess;
}

} // namespace kwb::cli

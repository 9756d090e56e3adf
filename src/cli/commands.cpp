#include "commands.h"

#include "textformat.h"

#include "core/protocol/protocolcodec.h"
#include "core/study/report.h"
#include "core/store/runstore.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workerlocator.h"

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

double number(const QJsonValue& value)
{
    return value.isDouble() ? value.toDouble() : kNaN;
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
    if (outcome.hasResponse() && outcome.response.value(QLatin1String("ok")).toBool())
        return ExitSuccess;
    QString status;
    QString message;
    int code;
    if (!outcome.hasResponse()) {
        status = outcome.status;
        message = outcome.message;
        code = status == FailureStatus::BadRequest ? ExitBadRequest : ExitWorker;
    } else {
        status = ProtocolCodec::errorCode(outcome.response);
        message = ProtocolCodec::errorMessage(outcome.response);
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

QString intensity(double flops, double bytes, const QJsonValue& given)
{
    const double value = given.isDouble() ? given.toDouble() : (bytes > 0 ? flops / bytes : kNaN);
    return std::isnan(value) ? QStringLiteral("-")
                             : QString::number(value, 'f', value < 10 ? 2 : 1) + QStringLiteral(" FLOP/B");
}

} // namespace

void warnWithoutSandbox(const WorkerSupervisor& supervisor)
{
    const QString sandbox = supervisor.sandboxStatus();
    if (sandbox == kSandboxBubblewrap)
        return;
    err() << "kwb: warning: the worker runs without the OS sandbox (network and files open to it): "
          << sandbox.mid(sandbox.startsWith(QLatin1String("none: ")) ? 6 : 0) << '\n';
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
    QJsonObject request{{QStringLiteral("type"), QStringLiteral("tasks")}};
    if (!session.options().tasksDir.isEmpty())
        request.insert(QStringLiteral("tasks_dir"), session.options().tasksDir);
    const WorkerSupervisor::Outcome outcome = session.supervisor().run(request);
    if (const int code = reportFailure(outcome, json))
        return code;
    const QJsonObject& response = outcome.response;
    if (json) {
        printJson(QJsonObject{{QStringLiteral("ok"), true},
                              {QStringLiteral("tasks"), response.value(QLatin1String("tasks"))},
                              {QStringLiteral("errors"), response.value(QLatin1String("errors"))}});
        return ExitSuccess;
    }
    TextTable table(
        {QStringLiteral("ID"), QStringLiteral("LEVEL"), QStringLiteral("TITLE"), QStringLiteral("DIMENSIONS")});
    table.setRightAligned(1);
    const QJsonArray tasks = response.value(QLatin1String("tasks")).toArray();
    for (const QJsonValue& value : tasks) {
        const QJsonObject task = value.toObject();
        QStringList dims;
        for (const QJsonValue& dim : task.value(QLatin1String("dims")).toArray()) {
            const QJsonObject d = dim.toObject();
            dims << d.value(QLatin1String("name")).toString() + QLatin1Char('=') +
                        numberOrDash(d.value(QLatin1String("full")), 10);
        }
        table.addRow({task.value(QLatin1String("id")).toString(), numberOrDash(task.value(QLatin1String("level"))),
                      task.value(QLatin1String("title")).toString(), dims.join(QLatin1Char(' '))});
    }
    out() << table.render();
    const QJsonArray errors = response.value(QLatin1String("errors")).toArray();
    out() << '\n' << tasks.size() << (tasks.size() == 1 ? " task" : " tasks");
    if (!errors.isEmpty())
        out() << ", " << errors.size() << (errors.size() == 1 ? " broken file" : " broken files");
    out() << '\n';
    for (const QJsonValue& value : errors) {
        const QJsonObject error = value.toObject();
        out() << "  " << error.value(QLatin1String("path")).toString() << ": "
              << error.value(QLatin1String("field")).toString() << ": "
              << error.value(QLatin1String("message")).toString() << '\n';
    }
    out().flush();
    return ExitSuccess;
}

int runAnalyze(Session& session, const AnalyzeOptions& options)
{
    const QJsonObject request{{QStringLiteral("type"), QStringLiteral("analyze")},
                              {QStringLiteral("task"), options.task},
                              {QStringLiteral("scale"), options.scale}};
    const WorkerSupervisor::Outcome outcome = session.supervisor().run(request);
    if (const int code = reportFailure(outcome, options.json))
        return code;
    QJsonObject response = outcome.response;
    const double flops = number(response.value(QLatin1String("flops")));
    const double unfused = number(response.value(QLatin1String("bytes_unfused")));
    const double fused = number(response.value(QLatin1String("bytes_fused")));
    if (options.json) {
        response.remove(QStringLiteral("id"));
        response.remove(QStringLiteral("type"));
        if (!response.contains(QLatin1String("intensity_unfused")))
            response.insert(QStringLiteral("intensity_unfused"), numberOrNull(unfused > 0 ? flops / unfused : kNaN));
        if (!response.contains(QLatin1String("intensity_fused")))
            response.insert(QStringLiteral("intensity_fused"), numberOrNull(fused > 0 ? flops / fused : kNaN));
        printJson(response);
        return ExitSuccess;
    }
    KeyValueList summary;
    summary.add(QStringLiteral("task"),
                response.value(QLatin1String("task")).toString(options.task) + QStringLiteral(" (scale ") +
                    response.value(QLatin1String("scale")).toString(options.scale) + QLatin1Char(')'));
    summary.add(QStringLiteral("output"), shape(response.value(QLatin1String("output_shape"))));
    summary.add(QStringLiteral("FLOPs"), siValue(flops, QStringLiteral("FLOP")));
    summary.add(QStringLiteral("bytes unfused"),
                siValue(unfused, QStringLiteral("B")) +
                    QStringLiteral("  (every op reads its inputs and writes its output)"));
    summary.add(QStringLiteral("bytes fused"),
                siValue(fused, QStringLiteral("B")) + QStringLiteral("  (task inputs, parameters and outputs only)"));
    summary.add(
        QStringLiteral("intensity"),
        intensity(flops, unfused, response.value(QLatin1String("intensity_unfused"))) + QStringLiteral(" unfused, ") +
            intensity(flops, fused, response.value(QLatin1String("intensity_fused"))) + QStringLiteral(" fused"));
    out() << summary.render() << '\n';

    TextTable ops({QStringLiteral("#"), QStringLiteral("OP"), QStringLiteral("CATEGORY"), QStringLiteral("OUTPUT"),
                   QStringLiteral("FLOPS"), QStringLiteral("BYTES"), QStringLiteral("FLOP/B")});
    for (int column : {0, 4, 5, 6})
        ops.setRightAligned(column);
    for (const QJsonValue& value : response.value(QLatin1String("ops")).toArray()) {
        const QJsonObject op = value.toObject();
        const double opFlops = number(op.value(QLatin1String("flops")));
        const double opBytes = number(op.value(QLatin1String("bytes")));
        ops.addRow({numberOrDash(op.value(QLatin1String("index"))), op.value(QLatin1String("op")).toString(),
                    op.value(QLatin1String("category")).toString(), shape(op.value(QLatin1String("output"))),
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

    QJsonObject request{{QStringLiteral("type"), QStringLiteral("evaluate")},
                        {QStringLiteral("task"), options.task},
                        {QStringLiteral("answer"), answer},
                        {QStringLiteral("profile"), options.profile},
                        {QStringLiteral("scale"), options.scale}};
    if (options.trials > 0)
        request.insert(QStringLiteral("timing_trials"), options.trials);
    if (!options.arch.isEmpty())
        request.insert(QStringLiteral("arch"), options.arch);
    if (!options.device.isEmpty())
        request.insert(QStringLiteral("device"), options.device);

    const int timeoutMs = int(std::lround(options.timeoutS * 1000.0));
    const WorkerSupervisor::Outcome outcome = session.supervisor().run(request, timeoutMs);

    // A timeout or a crash is the candidate's result, like a compile error; a worker that cannot
    // start, or a refused request, is not.
    const bool candidateFailure = !outcome.hasResponse() && (outcome.status == FailureStatus::Timeout ||
                                                             outcome.status == FailureStatus::Crashed ||
                                                             outcome.status == FailureStatus::ResourceLimit);
    if (!candidateFailure) {
        if (const int code = reportFailure(outcome, options.json))
            return code;
    }

    const QJsonObject& response = outcome.response;
    const QString status = candidateFailure ? outcome.status : response.value(QLatin1String("status")).toString();
    const QString message = candidateFailure ? outcome.message : response.value(QLatin1String("message")).toString();
    const QJsonObject compile = response.value(QLatin1String("compile")).toObject();
    const QJsonObject correctness = response.value(QLatin1String("correctness")).toObject();
    const QJsonObject timing = response.value(QLatin1String("timing")).toObject();
    const QJsonObject candidateTiming = timing.value(QLatin1String("candidate")).toObject();
    const QJsonObject referenceTiming = timing.value(QLatin1String("reference")).toObject();
    const QString compileLog = compile.value(QLatin1String("log")).toString();
    const double speedup = number(response.value(QLatin1String("speedup")));
    const double maxAbsDiff = number(correctness.value(QLatin1String("max_abs_diff")));
    const int exitCode = status == QLatin1String("correct") ? ExitSuccess : ExitNotCorrect;

    if (options.json) {
        QJsonObject result{
            {QStringLiteral("ok"), true},
            {QStringLiteral("task"), options.task},
            {QStringLiteral("candidate"), options.candidateFile},
            {QStringLiteral("status"), status},
            {QStringLiteral("stage"),
             candidateFailure ? QJsonValue(QJsonValue::Null) : response.value(QLatin1String("stage"))},
            {QStringLiteral("message"), message},
            {QStringLiteral("compile_log"), compileLog},
            {QStringLiteral("speedup"), numberOrNull(speedup)},
            {QStringLiteral("max_abs_diff"), numberOrNull(maxAbsDiff)},
            {QStringLiteral("reference_ms"), numberOrNull(number(referenceTiming.value(QLatin1String("mean_ms"))))},
            {QStringLiteral("candidate_ms"), numberOrNull(number(candidateTiming.value(QLatin1String("mean_ms"))))},
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
        table.add(QStringLiteral("stage"), response.value(QLatin1String("stage")).toString());
    if (!message.isEmpty())
        table.add(QStringLiteral("message"), message);
    if (!compile.isEmpty()) {
        QString line = compile.value(QLatin1String("ok")).toBool() ? QStringLiteral("ok") : QStringLiteral("failed");
        if (compile.value(QLatin1String("ms")).isDouble())
            line += QStringLiteral(" in ") + milliseconds(compile.value(QLatin1String("ms")).toDouble());
        if (!compile.value(QLatin1String("arch")).toString().isEmpty())
            line += QStringLiteral(" for ") + compile.value(QLatin1String("arch")).toString();
        QStringList kernels;
        for (const QJsonValue& kernel : compile.value(QLatin1String("kernels")).toArray())
            kernels << kernel.toString();
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
    }
    if (!correctness.isEmpty()) {
        table.add(QStringLiteral("correctness"),
                  QStringLiteral("%1/%2 trials passed, max abs diff %3, max rel diff %4 (atol %5, rtol %6)")
                      .arg(numberOrDash(correctness.value(QLatin1String("passed"))),
                           numberOrDash(correctness.value(QLatin1String("trials"))),
                           numberOrDash(correctness.value(QLatin1String("max_abs_diff")), 3),
                           numberOrDash(correctness.value(QLatin1String("max_rel_diff")), 3),
                           numberOrDash(correctness.value(QLatin1String("atol")), 3),
                           numberOrDash(correctness.value(QLatin1String("rtol")), 3)));
    }
    const auto timingLine = [](const QJsonObject& t) {
        return milliseconds(number(t.value(QLatin1String("mean_ms")))) + QStringLiteral(" mean  (median ") +
               milliseconds(number(t.value(QLatin1String("median_ms")))) + QStringLiteral(", std ") +
               milliseconds(number(t.value(QLatin1String("std_ms")))) + QStringLiteral(", ") +
               numberOrDash(t.value(QLatin1String("trials"))) + QStringLiteral(" trials)");
    };
    if (!referenceTiming.isEmpty())
        table.add(QStringLiteral("reference"), timingLine(referenceTiming));
    if (!candidateTiming.isEmpty())
        table.add(QStringLiteral("candidate"), timingLine(candidateTiming));
    if (!std::isnan(speedup))
        table.add(QStringLiteral("speedup"), QString::number(speedup, 'f', 2) + QLatin1Char('x'));
    if (response.value(QLatin1String("torch_only")).toBool())
        table.add(QStringLiteral("note"), QStringLiteral("torch-only: the candidate launched no custom kernel"));
    const QJsonObject degenerate = response.value(QLatin1String("degenerate")).toObject();
    if (!degenerate.isEmpty())
        table.add(QStringLiteral("warning"),
                  QStringLiteral("degenerate reference (") + degenerate.value(QLatin1String("kind")).toString() +
                      QStringLiteral("): ") + degenerate.value(QLatin1String("message")).toString());
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
    const QJsonObject request{{QStringLiteral("type"), QStringLiteral("device")},
                              {QStringLiteral("ceilings"), ceilings}};
    const WorkerSupervisor::Outcome outcome = session.supervisor().run(request);
    if (const int code = reportFailure(outcome, json))
        return code;
    QJsonObject response = outcome.response;
    if (json) {
        response.remove(QStringLiteral("id"));
        response.remove(QStringLiteral("type"));
        printJson(response);
        return ExitSuccess;
    }
    if (!response.value(QLatin1String("available")).toBool()) {
        out() << "no GPU: " << response.value(QLatin1String("reason")).toString(QStringLiteral("no reason given"))
              << '\n';
        out().flush();
        return ExitSuccess;
    }
    const auto value = [&response](const char* key) { return number(response.value(QLatin1String(key))); };
    KeyValueList table;
    table.add(QStringLiteral("GPU"), response.value(QLatin1String("name")).toString());
    table.add(QStringLiteral("compute capability"),
              response.value(QLatin1String("cc")).toString() + QStringLiteral(" (") +
                  response.value(QLatin1String("arch")).toString() + QLatin1Char(')'));
    table.add(QStringLiteral("SMs"), numberOrDash(response.value(QLatin1String("sm_count"))));
    table.add(QStringLiteral("L2 cache"), siValue(value("l2_bytes"), QStringLiteral("B")));
    table.add(QStringLiteral("memory"), siValue(value("memory_bytes"), QStringLiteral("B")));
    table.add(QStringLiteral("SM clock"), siValue(value("sm_clock_khz") * 1e3, QStringLiteral("Hz")));
    table.add(QStringLiteral("memory clock"), siValue(value("memory_clock_khz") * 1e3, QStringLiteral("Hz")));
    table.add(QStringLiteral("HBM (theoretical)"), siValue(value("hbm_theoretical_gbps") * 1e9, QStringLiteral("B/s")));
    const QJsonObject measured = response.value(QLatin1String("ceilings")).toObject();
    const auto ceiling = [&measured](const char* key) { return number(measured.value(QLatin1String(key))); };
    if (!measured.isEmpty()) {
        table.add(QStringLiteral("HBM copy (measured)"),
                  siValue(ceiling("hbm_copy_gbps") * 1e9, QStringLiteral("B/s")));
        table.add(QStringLiteral("FP32 FMA (measured)"),
                  siValue(ceiling("fp32_fma_gflops") * 1e9, QStringLiteral("FLOP/s")));
        if (measured.contains(QLatin1String("tensor_bf16_gflops")))
            table.add(QStringLiteral("BF16 tensor (measured)"),
                      siValue(ceiling("tensor_bf16_gflops") * 1e9, QStringLiteral("FLOP/s")));
        if (measured.contains(QLatin1String("tensor_tf32_gflops")))
            table.add(QStringLiteral("TF32 tensor (measured)"),
                      siValue(ceiling("tensor_tf32_gflops") * 1e9, QStringLiteral("FLOP/s")));
    }
    out() << table.render();
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

    // RunStore::open creates a missing file: a report must not.
    const QFileInfo info(options.database);
    if (!info.exists() || !info.isFile())
        return refuse(QStringLiteral("bad_database"), QStringLiteral("no such database: %1").arg(options.database));
    RunStore store;
    if (!store.open(options.database))
        return refuse(QStringLiteral("bad_database"),
                      QStringLiteral("cannot open %1: %2").arg(options.database, store.errorString()));

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

// kwb-bench-supervisor: what the supervisor costs per candidate and how many candidates a GPU
// gets through per minute, through the product's own EvaluationQueue (the path `kwb run` and the
// window use), in several configurations, side by side in one process so the ratios are fair:
//
//   fresh+spare+ahead  a fresh worker per candidate, the next one started ahead, CUDA compiled
//                      ahead in CPU workers (the default). Spares are warmed (CUDA context and
//                      first library calls, part by part under the GPU's quiet lock) as soon as
//                      they answer hello, while candidates run (EvaluationQueue's default)
//   fresh+spare+nowarm+ahead  the same with warming off (SupervisorTuning::setWarmSpare)
//   +warmbusy          spares warmed as soon as they answer hello, while candidates run
//                      (WorkerSupervisor::setWarmWhileBusy, EvaluationQueue's default; the
//                      worker's warm lets the quiet lock go between its parts, so a timing waits
//                      for one part at most); +idlewarm: only once the supervisor idles
//   fresh+spare+spares1+ahead the same with 1 spare kept (any spares<N>: N spares,
//                      SupervisorTuning::setSpareCount; without the word, the supervisor's default)
//   +gap<MS>           (any mode) candidates submitted one at a time, each MS ms after the last
//                      one's result, as a model's generation spaces them in a run: the idle gaps
//                      in which spares warm (warm against nowarm: the latency per candidate)
//   +wait              (fresh modes) the next request waits until the last worker has exited
//                      (SupervisorTuning::setHandOffLeaving(false)); without it a worker that
//                      answered is let go as it exits and the next starts on a spare meanwhile
//   +nointent          the timing's intent on the quiet lock taken only when it asks for the
//                      lock (evaluate's "timing_intent": false), not from the last correctness trial
//   +exitfree          (fresh modes) a handed-off worker gets its EOF at once, its exit not held
//                      under the quiet lock (SupervisorTuning::setExitUnderLock(false))
//   +burst, +staggered (fresh modes) a top-up starts every missing spare at once, or one after
//                      another (SupervisorTuning::setSpareStartsAtOnce); without either, the
//                      host's rule (at once where it has a core for each and two more)
//   +traceshared       the trace after the timing under the evaluation's share (evaluate's
//                      "trace_exclusive": false), not under the timing's exclusive hold kept for it
//   +lockwarmup        the timing's setup and warm-up under its exclusive hold on the quiet lock
//                      (evaluate's "timing_warmup_shared": false), not before it under the share
//   +slots<N>          (any mode) N evaluations at once on the GPU, each slot its own supervisor
//                      and spares (EvaluationQueue::setEvaluationsPerGpu); without it, the queue's
//                      default. The workers' quiet lock keeps each timing alone on the GPU
//   fresh              a fresh worker per candidate, nothing ahead
//   reuse+ahead        one worker kept while healthy, compile-ahead on
//
// A second table sums each mode's jobs: the worker's stages, the waits for the GPU's quiet lock,
// the time outside the worker. Per candidate, "overhead" is the queue's wall time for the job (handed to the GPU's
// supervisor until its result) minus the worker's own stage total (stage_ms.total): process start, hello, the request's
// travel. Per mode, the warmed spares' warm-up (warm_ms.total, the quiet lock's wait included) is reported as its
// median and count. A separate pass measures compile-ahead throughput alone: every cuda block compiled by k CPU workers
// at once (compile requests, no GPU).
//
// Usage: kwb-bench-supervisor --worker PATH --candidates DIR [--tasks L1,L2] [--timing-trials 10 (0: the profile's)]
//        [--modes fresh+spare+ahead,fresh+spare+spares1+ahead,fresh+spare+nowarm+ahead,fresh,reuse+ahead]
//        [--compile-workers 1,4] [--json FILE]

#include "core/protocol/workerrequests.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/memorycgroup.h"
#include "core/workers/supervisortuning.h"
#include "core/workers/workersupervisor.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <numeric>

using namespace kwb;

namespace {

struct Candidate
{
    QString task;
    QString file;
    QString answer;
};

// The parts of a warm's warm_ms (docs/protocol.md, warm), in their order.
const QStringList kWarmParts{QStringLiteral("cpu"),   QStringLiteral("context"),   QStringLiteral("cublas"),
                             QStringLiteral("cudnn"), QStringLiteral("evaluator"), QStringLiteral("quiet_wait"),
                             QStringLiteral("total")};

double median(QList<double> v)
{
    if (v.isEmpty())
        return 0.0;
    std::sort(v.begin(), v.end());
    const qsizetype m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2.0;
}

QJsonObject runMode(const QString& mode, const QList<Candidate>& candidates, const QString& worker, int timingTrials)
{
    EvaluationQueue queue({0});
    const QStringList words = mode.split(QLatin1Char('+'));
    // "slots<N>": N evaluations at once on the GPU (EvaluationQueue::setEvaluationsPerGpu); the
    // queue's default otherwise. Set first: every other setting goes to each slot's supervisor.
    static const QRegularExpression slotsWord(QStringLiteral("^slots(\\d+)$"));
    for (const QString& word : words)
        if (const QRegularExpressionMatch m = slotsWord.match(word); m.hasMatch())
            queue.setEvaluationsPerGpu(m.captured(1).toInt());
    const QList<WorkerSupervisor*> gpuSlots = queue.gpuSupervisors(0);
    queue.setProgram(worker);
    queue.setTimeout(300 * 1000);
    const bool reuse = mode.startsWith(QLatin1String("reuse"));
    queue.setIsolation(reuse ? WorkerSupervisor::Isolation::ReuseWhileHealthy
                             : WorkerSupervisor::Isolation::FreshPerRequest);
    for (WorkerSupervisor* s : gpuSlots)
        s->setSpareWorker(mode.contains(QLatin1String("spare")));
    // "spares<N>" among the mode's words sets the count (per slot); the supervisor's default otherwise.
    static const QRegularExpression sparesWord(QStringLiteral("^spares(\\d+)$"));
    // "gap<MS>": one candidate at a time, MS ms after the last one's result; -1: all at once.
    static const QRegularExpression gapWord(QStringLiteral("^gap(\\d+)$"));
    int gapMs = -1;
    for (const QString& word : words) {
        if (const QRegularExpressionMatch m = sparesWord.match(word); m.hasMatch())
            for (WorkerSupervisor* s : gpuSlots)
                SupervisorTuning::setSpareCount(*s, m.captured(1).toInt());
        if (const QRegularExpressionMatch m = gapWord.match(word); m.hasMatch())
            gapMs = m.captured(1).toInt();
    }
    const int spares = gpuSlots.first()->spareWorker() ? SupervisorTuning::spareCount(*gpuSlots.first()) : 0;
    for (WorkerSupervisor* s : gpuSlots) {
        SupervisorTuning::setWarmSpare(*s, !mode.contains(QLatin1String("nowarm")));
        // The queue's own default (warm while busy) unless the mode says "idlewarm" (warm only when
        // idle, as before the 2026-12-01 late change) or "warmbusy" (explicitly on).
        if (words.contains(QLatin1String("idlewarm")) || words.contains(QLatin1String("warmbusy")))
            s->setWarmWhileBusy(words.contains(QLatin1String("warmbusy")));
        // "wait": the next fresh worker's request waits for the last worker's exit (as before the
        // hand-off, docs/decisions.md 2026-12-02 "The next fresh worker starts while the last one exits").
        SupervisorTuning::setHandOffLeaving(*s, !words.contains(QLatin1String("wait")));
        SupervisorTuning::setExitUnderLock(*s, !words.contains(QLatin1String("exitfree")));
        if (words.contains(QLatin1String("burst")) || words.contains(QLatin1String("staggered")))
            SupervisorTuning::setSpareStartsAtOnce(*s, words.contains(QLatin1String("burst")));
    }
    queue.setCompileWorkerCount(mode.contains(QLatin1String("ahead")) ? 2 : 0);

    QHash<qint64, QElapsedTimer> started;
    QHash<qint64, int> index;
    QJsonArray jobs;
    QList<double> overheads, walls;
    QHash<QString, QList<double>> warmParts; // each warm_ms part of the spares that warmed before taking over
    int done = 0, correct = 0, cached = 0;
    QEventLoop loop;
    QElapsedTimer clock;
    int submitted = 0;
    // The benchmark's own switches of the worker, sent with every evaluate request.
    QJsonObject benchmarkFields;
    // "nointent": the timing announces its intent on the quiet lock only when it asks for the
    // lock, not from the last correctness trial on (docs/protocol.md, the quiet lock)
    if (words.contains(QLatin1String("nointent")))
        benchmarkFields.insert(QStringLiteral("timing_intent"), false);
    if (words.contains(QLatin1String("lockwarmup")))
        benchmarkFields.insert(QStringLiteral("timing_warmup_shared"), false);
    if (words.contains(QLatin1String("traceshared")))
        benchmarkFields.insert(QStringLiteral("trace_exclusive"), false);
    SupervisorTuning::setRequestFields(queue, benchmarkFields);
    const auto submitNext = [&] {
        const int i = submitted++;
        WorkerRequests::Evaluate request;
        request.task = candidates[i].task;
        request.answer = candidates[i].answer;
        request.timingTrials = timingTrials; // 0: the profile's own timing (the study's adaptive method)
        const qint64 id = queue.submit(request);
        index.insert(id, i);
    };
    // When each job was handed to its GPU's supervisor and when each worker took over (ms on
    // `clock`): a job's spare wait is from its start to the first take-over after it (one slot:
    // its own worker; a take-over made inside sendRequest, before jobStarted, counts as none).
    QHash<qint64, double> startedAtMs;
    QList<double> takeoversMs;
    QObject::connect(&queue, &EvaluationQueue::jobStarted, &queue, [&](qint64 id) {
        started[id].start();
        startedAtMs[id] = double(clock.nsecsElapsed()) / 1e6;
    });
    for (WorkerSupervisor* s : gpuSlots)
        QObject::connect(s, &WorkerSupervisor::workerAvailable, &queue, [&](qint64, const HelloInfo& hello) {
            takeoversMs << double(clock.nsecsElapsed()) / 1e6;
            if (!hello.warmMs)
                return;
            for (const QString& part : kWarmParts)
                warmParts[part] << hello.warmMs->value(part);
        });
    const auto finish = [&](qint64 id, const QString& status, const QJsonObject& result) {
        const double wall = started.contains(id) ? double(started[id].nsecsElapsed()) / 1e6 : 0.0;
        const double workerMs =
            result.value(QLatin1String("stage_ms")).toObject().value(QLatin1String("total")).toDouble();
        const Candidate& c = candidates.at(index.value(id));
        const bool wasCached =
            result.value(QLatin1String("compile")).toObject().value(QLatin1String("cached")).toBool();
        cached += wasCached ? 1 : 0;
        correct += status == QLatin1String("correct") ? 1 : 0;
        if (workerMs > 0) {
            overheads << wall - workerMs;
            walls << wall;
        }
        double spareWait = 0;
        if (startedAtMs.contains(id)) {
            const double from = startedAtMs[id], to = double(clock.nsecsElapsed()) / 1e6;
            for (double t : std::as_const(takeoversMs))
                if (t >= from && t <= to) {
                    spareWait = t - from;
                    break;
                }
        }
        jobs.append(QJsonObject{{QStringLiteral("task"), c.task},
                                {QStringLiteral("file"), c.file},
                                {QStringLiteral("status"), status},
                                {QStringLiteral("wall_ms"), wall},
                                {QStringLiteral("worker_ms"), workerMs},
                                {QStringLiteral("overhead_ms"), workerMs > 0 ? wall - workerMs : 0.0},
                                {QStringLiteral("spare_wait_ms"), spareWait},
                                {QStringLiteral("compile_cached"), wasCached},
                                {QStringLiteral("speedup"), result.value(QLatin1String("speedup"))},
                                {QStringLiteral("slot"), result.value(QLatin1String("slot"))},
                                // where the worker's time went (reuse's overhead is all in here)
                                {QStringLiteral("stage_ms"), result.value(QLatin1String("stage_ms"))},
                                {QStringLiteral("stage_detail_ms"), result.value(QLatin1String("stage_detail_ms"))},
                                {QStringLiteral("timing"), result.value(QLatin1String("timing"))}});
        // A reference candidate not judged correct is the benchmark's own finding: why, kept.
        const QString message = result.value(QLatin1String("message")).toString();
        if (status != QLatin1String("correct")) {
            QJsonObject last = jobs.last().toObject();
            last.insert(QStringLiteral("stage"), result.value(QLatin1String("stage")));
            last.insert(QStringLiteral("message"), message);
            last.insert(QStringLiteral("failure"),
                        result.value(QLatin1String("correctness")).toObject().value(QLatin1String("failure")));
            jobs.last() = last;
        }
        std::fprintf(stderr, "  %-18s %-8s %-14s wall %8.0f ms  worker %8.0f ms%s%s%s\n", qPrintable(mode),
                     qPrintable(c.task), qPrintable(status), wall, workerMs,
                     wasCached ? "  (cubin compiled ahead)" : "", message.isEmpty() ? "" : ": ",
                     qPrintable(message.left(300)));
        if (++done == candidates.size())
            loop.quit();
        else if (gapMs >= 0 && submitted < candidates.size())
            QTimer::singleShot(gapMs, &queue, submitNext);
    };
    QObject::connect(&queue, &EvaluationQueue::jobFinished, &queue, [&](qint64 id, const EvaluationResult& evaluation) {
        finish(id, evaluation.statusName, evaluation.raw);
    });
    QObject::connect(&queue, &EvaluationQueue::jobFailed, &queue,
                     [&](qint64 id, const QString& status, const QString&) { finish(id, status, QJsonObject()); });
    clock.start();
    // The mode's span on the wall clock, to place it in samples taken beside it (nvidia-smi's
    // utilization, bench/queue_floor.py).
    const qint64 startedEpochMs = QDateTime::currentMSecsSinceEpoch();
    for (int i = 0; i < (gapMs >= 0 ? 1 : int(candidates.size())); ++i)
        submitNext();
    loop.exec();
    const double totalS = double(clock.nsecsElapsed()) / 1e9;
    return QJsonObject{
        {QStringLiteral("mode"), mode},
        {QStringLiteral("spares"), spares},
        {QStringLiteral("gap_ms"), gapMs},
        {QStringLiteral("candidates"), int(candidates.size())},
        {QStringLiteral("correct"), correct},
        {QStringLiteral("compiled_ahead"), cached},
        {QStringLiteral("total_s"), totalS},
        {QStringLiteral("started_epoch_ms"), startedEpochMs},
        {QStringLiteral("ended_epoch_ms"), QDateTime::currentMSecsSinceEpoch()},
        {QStringLiteral("candidates_per_minute"), candidates.size() * 60.0 / totalS},
        {QStringLiteral("median_overhead_ms"), median(overheads)},
        {QStringLiteral("median_wall_ms"), median(walls)},
        {QStringLiteral("warmed_spares"), int(warmParts.value(QStringLiteral("total")).size())},
        {QStringLiteral("median_warm_total_ms"), median(warmParts.value(QStringLiteral("total")))},
        {QStringLiteral("median_warm_quiet_wait_ms"), median(warmParts.value(QStringLiteral("quiet_wait")))},
        {QStringLiteral("slots"), int(gpuSlots.size())},
        {QStringLiteral("handed_off"),
         std::accumulate(gpuSlots.cbegin(), gpuSlots.cend(), 0,
                         [](int n, const WorkerSupervisor* s) { return n + SupervisorTuning::handedOffWorkers(*s); })},
        {QStringLiteral("median_warm_parts_ms"),
         [&] {
             QJsonObject parts;
             for (const QString& part : kWarmParts)
                 parts.insert(part, median(warmParts.value(part)));
             return parts;
         }()},
        {QStringLiteral("worker_exits_ms"),
         [&] {
             QJsonArray exits;
             for (const WorkerSupervisor* s : std::as_const(gpuSlots))
                 for (double ms : SupervisorTuning::leavingExitMs(*s))
                     exits.append(ms);
             return exits;
         }()},
        {QStringLiteral("jobs"), jobs}};
}

/// Compile-ahead alone: every answer compiled by `workers` CPU workers at once, sent whole as the
/// queue sends it (the worker finds the cuda block; a torch-only answer is a cheap refusal).
QJsonObject compileThroughput(const QList<Candidate>& candidates, const QString& worker, int workers)
{
    QList<QString> sources;
    for (const Candidate& c : candidates)
        sources << c.answer;
    QList<WorkerSupervisor*> pool;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("CUDA_VISIBLE_DEVICES"), QString()); // CPU-only, as the queue's compilers
    for (int i = 0; i < workers; ++i) {
        auto* s = new WorkerSupervisor;
        s->setProgram(worker);
        s->setProcessEnvironment(env);
        s->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
        pool << s;
    }
    int next = 0, done = 0, ok = 0;
    QList<double> ms;
    QEventLoop loop;
    QElapsedTimer clock;
    clock.start();
    std::function<void(WorkerSupervisor*)> feed = [&](WorkerSupervisor* s) {
        if (next >= sources.size())
            return;
        WorkerRequests::Compile compile;
        compile.answer = sources[next++];
        compile.arch = QStringLiteral("sm_90");
        compile.returnCubin = true;
        s->sendRequest(WorkerRequests::compile(compile));
    };
    for (WorkerSupervisor* s : pool) {
        QObject::connect(s, &WorkerSupervisor::responseAvailable, s, [&, s](qint64, const WorkerResponse& r) {
            const CompileInfo compiled = r.compile.value_or(CompileInfo());
            ok += compiled.ok ? 1 : 0;
            ms << compiled.ms.value_or(0.0);
            if (++done == sources.size())
                loop.quit();
            else
                feed(s);
        });
        QObject::connect(s, &WorkerSupervisor::requestFailed, s, [&, s](qint64, const QString&, const QString&) {
            if (++done == sources.size())
                loop.quit();
            else
                feed(s);
        });
        feed(s);
    }
    loop.exec();
    const double totalS = double(clock.nsecsElapsed()) / 1e9;
    qDeleteAll(pool);
    return QJsonObject{{QStringLiteral("workers"), workers},
                       {QStringLiteral("blocks"), int(sources.size())},
                       {QStringLiteral("compiled"), ok},
                       {QStringLiteral("total_s"), totalS},
                       {QStringLiteral("blocks_per_minute"), sources.size() * 60.0 / totalS},
                       {QStringLiteral("median_nvrtc_ms"), median(ms)}};
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.addHelpOption();
    const QCommandLineOption workerOption(QStringLiteral("worker"), QStringLiteral("kwb-worker"),
                                          QStringLiteral("PATH"));
    const QCommandLineOption candidatesOption(QStringLiteral("candidates"), QStringLiteral("tests/fixtures/candidates"),
                                              QStringLiteral("DIR"));
    const QCommandLineOption tasksOption(QStringLiteral("tasks"), QStringLiteral("levels (default L1,L2)"),
                                         QStringLiteral("LIST"), QStringLiteral("L1,L2"));
    const QCommandLineOption trialsOption(QStringLiteral("timing-trials"),
                                          QStringLiteral("default 10; 0: the profile's own method"),
                                          QStringLiteral("N"), QStringLiteral("10"));
    const QCommandLineOption modesOption(QStringLiteral("modes"), QStringLiteral("configurations"),
                                         QStringLiteral("LIST"), QStringLiteral("fresh+spare+ahead,fresh,reuse+ahead"));
    const QCommandLineOption compileOption(QStringLiteral("compile-workers"), QStringLiteral("e.g. 1,4"),
                                           QStringLiteral("LIST"), QStringLiteral("1,4"));
    const QCommandLineOption jsonOption(QStringLiteral("json"), QStringLiteral("write results"),
                                        QStringLiteral("FILE"));
    parser.addOptions(
        {workerOption, candidatesOption, tasksOption, trialsOption, modesOption, compileOption, jsonOption});
    parser.process(app);

    const QString worker = parser.value(workerOption);
    const QDir dir(parser.value(candidatesOption) + QStringLiteral("/reference"));
    if (worker.isEmpty() || !QFileInfo(worker).isExecutable() || !dir.exists()) {
        std::fprintf(stderr,
                     "kwb-bench-supervisor: --worker PATH and --candidates DIR (with reference/) are required\n");
        return 2;
    }
    const QStringList levels = parser.value(tasksOption).split(QLatin1Char(','));
    QList<Candidate> candidates;
    static const QRegularExpression stem(QStringLiteral("^L(\\d)_(\\d\\d)\\.md$"));
    for (const QString& file : dir.entryList({QStringLiteral("L*.md")}, QDir::Files, QDir::Name)) {
        const QRegularExpressionMatch m = stem.match(file);
        if (!m.hasMatch() || !levels.contains(QStringLiteral("L") + m.captured(1)))
            continue; // the _b variants are left out: one candidate per task
        QFile f(dir.filePath(file));
        if (!f.open(QIODevice::ReadOnly))
            continue;
        candidates << Candidate{QStringLiteral("L%1/%2").arg(m.captured(1)).arg(m.captured(2).toInt()), file,
                                QString::fromUtf8(f.readAll())};
    }
    std::fprintf(stderr, "kwb-bench-supervisor: %d candidates, timing trials %d\n", int(candidates.size()),
                 parser.value(trialsOption).toInt());

    QJsonArray modes, compiles;
    for (const QString& mode : parser.value(modesOption).split(QLatin1Char(','), Qt::SkipEmptyParts))
        modes.append(runMode(mode, candidates, worker, parser.value(trialsOption).toInt()));
    for (const QString& k : parser.value(compileOption).split(QLatin1Char(','), Qt::SkipEmptyParts))
        compiles.append(compileThroughput(candidates, worker, k.toInt()));

    // The queue's throughput means something only with how its workers were isolated (issue 32:
    // bubblewrap from PATH and a memory cgroup per worker, or why not).
    {
        WorkerSupervisor probe;
        probe.setProgram(worker);
        std::printf("- worker sandbox: %s\n- memory cgroup: %s\n\n", qPrintable(probe.sandboxStatus()),
                    qPrintable(memoryCgroupStatus()));
    }
    std::printf("| mode | slots | spares | candidates | correct | compiled ahead | total s | candidates/min | median "
                "overhead ms | median wall ms "
                "| warmed spares | median warm total ms (quiet wait) | handed off |\n");
    std::printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (const QJsonValue& v : std::as_const(modes)) {
        const QJsonObject m = v.toObject();
        const int warmed = m.value(QLatin1String("warmed_spares")).toInt();
        const QString warm = warmed == 0
                                 ? QStringLiteral("-")
                                 : QStringLiteral("%1 (%2)")
                                       .arg(m.value(QLatin1String("median_warm_total_ms")).toDouble(), 0, 'f', 0)
                                       .arg(m.value(QLatin1String("median_warm_quiet_wait_ms")).toDouble(), 0, 'f', 0);
        std::printf("| %s | %d | %d | %d | %d | %d | %.1f | %.1f | %.0f | %.0f | %d | %s | %d |\n",
                    qPrintable(m.value(QLatin1String("mode")).toString()), m.value(QLatin1String("slots")).toInt(),
                    m.value(QLatin1String("spares")).toInt(), m.value(QLatin1String("candidates")).toInt(),
                    m.value(QLatin1String("correct")).toInt(), m.value(QLatin1String("compiled_ahead")).toInt(),
                    m.value(QLatin1String("total_s")).toDouble(),
                    m.value(QLatin1String("candidates_per_minute")).toDouble(),
                    m.value(QLatin1String("median_overhead_ms")).toDouble(),
                    m.value(QLatin1String("median_wall_ms")).toDouble(), warmed, qPrintable(warm),
                    m.value(QLatin1String("handed_off")).toInt());
    }
    // Where each mode's time went: sums over its jobs (ms) of the worker's own stage totals, the
    // timing's wait for the GPU's quiet lock and its longest, the evaluation's waits for its
    // shared holds, the time outside the worker (each job's wall less its worker total: waits for
    // a spare, the request's travel), of it the waits for a spare still starting or warming (one
    // slot: exact; more: each job's first take-over after its start) and the jobs' walls (which
    // overlap with two slots or more).
    std::printf("\n| mode | worker total | correctness | first trials | timing | timing warm-up | timing quiet wait | "
                "longest wait "
                "| share wait | outside the worker | spare wait | job walls | worker exits: count, median ms |\n"
                "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (const QJsonValue& v : std::as_const(modes)) {
        const QJsonObject m = v.toObject();
        double total = 0, correctness = 0, first = 0, timing = 0, warmup = 0, wait = 0, longest = 0, share = 0,
               outside = 0, spare = 0, walls = 0;
        for (const QJsonValue& j : m.value(QLatin1String("jobs")).toArray()) {
            const QJsonObject job = j.toObject();
            const QJsonObject stages = job.value(QLatin1String("stage_ms")).toObject();
            const QJsonObject detail = job.value(QLatin1String("stage_detail_ms")).toObject();
            const auto part = [&](const char* stage, const char* name) {
                return detail.value(QLatin1String(stage)).toObject().value(QLatin1String(name)).toDouble();
            };
            total += stages.value(QLatin1String("total")).toDouble();
            correctness += stages.value(QLatin1String("correctness")).toDouble();
            first += part("correctness", "first_trial_total");
            timing += stages.value(QLatin1String("timing")).toDouble();
            warmup += part("timing", "measurement_warmup");
            wait += part("timing", "quiet_wait");
            longest = std::max(longest, part("timing", "quiet_wait"));
            share += part("share", "quiet_wait");
            outside += job.value(QLatin1String("overhead_ms")).toDouble();
            spare += job.value(QLatin1String("spare_wait_ms")).toDouble();
            walls += job.value(QLatin1String("wall_ms")).toDouble();
        }
        QList<double> exits;
        for (const QJsonValue& e : m.value(QLatin1String("worker_exits_ms")).toArray())
            exits << e.toDouble();
        std::printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n",
                    qPrintable(m.value(QLatin1String("mode")).toString()), total, correctness, first, timing, warmup,
                    wait, longest, share, outside, spare, walls,
                    exits.isEmpty()
                        ? "-"
                        : qPrintable(QStringLiteral("%1, %2").arg(exits.size()).arg(median(exits), 0, 'f', 0)));
    }
    // The warmed spares' warm, part by part (medians, ms): where a timing's wait for them comes from.
    std::printf("\n| mode | warmed spares |");
    for (const QString& part : kWarmParts)
        std::printf(" warm %s |", qPrintable(part));
    std::printf("\n|---|--:|");
    for (qsizetype i = 0; i < kWarmParts.size(); ++i)
        std::printf("--:|");
    std::printf("\n");
    for (const QJsonValue& v : std::as_const(modes)) {
        const QJsonObject m = v.toObject();
        if (m.value(QLatin1String("warmed_spares")).toInt() == 0)
            continue;
        std::printf("| %s | %d |", qPrintable(m.value(QLatin1String("mode")).toString()),
                    m.value(QLatin1String("warmed_spares")).toInt());
        const QJsonObject parts = m.value(QLatin1String("median_warm_parts_ms")).toObject();
        for (const QString& part : kWarmParts)
            std::printf(" %.0f |", parts.value(part).toDouble());
        std::printf("\n");
    }
    // Each candidate's own wall in each mode (handed to its GPU's supervisor until its result:
    // the spare wait, the request's travel and the worker's stages; ms), the per-candidate end
    // to end of the queue's modes.
    std::printf("\n| task |");
    for (const QJsonValue& v : std::as_const(modes))
        std::printf(" %s |", qPrintable(v.toObject().value(QLatin1String("mode")).toString()));
    std::printf("\n|---|");
    for (qsizetype i = 0; i < modes.size(); ++i)
        std::printf("--:|");
    std::printf("\n");
    for (const Candidate& c : std::as_const(candidates)) {
        std::printf("| %s |", qPrintable(c.task));
        for (const QJsonValue& v : std::as_const(modes)) {
            double wall = -1;
            for (const QJsonValue& j : v.toObject().value(QLatin1String("jobs")).toArray())
                if (j.toObject().value(QLatin1String("task")).toString() == c.task)
                    wall = j.toObject().value(QLatin1String("wall_ms")).toDouble();
            if (wall < 0)
                std::printf(" - |");
            else
                std::printf(" %.0f |", wall);
        }
        std::printf("\n");
    }
    std::printf("\n| compile workers | cuda blocks | compiled | total s | blocks/min | median NVRTC ms "
                "|\n|--:|--:|--:|--:|--:|--:|\n");
    for (const QJsonValue& v : std::as_const(compiles)) {
        const QJsonObject c = v.toObject();
        std::printf("| %d | %d | %d | %.2f | %.0f | %.0f |\n", c.value(QLatin1String("workers")).toInt(),
                    c.value(QLatin1String("blocks")).toInt(), c.value(QLatin1String("compiled")).toInt(),
                    c.value(QLatin1String("total_s")).toDouble(),
                    c.value(QLatin1String("blocks_per_minute")).toDouble(),
                    c.value(QLatin1String("median_nvrtc_ms")).toDouble());
    }
    if (parser.isSet(jsonOption)) {
        QFile out(parser.value(jsonOption));
        if (out.open(QIODevice::WriteOnly))
            out.write(
                QJsonDocument(QJsonObject{{QStringLiteral("modes"), modes}, {QStringLiteral("compile"), compiles}})
                    .toJson(QJsonDocument::Indented));
    }
    return 0;
}

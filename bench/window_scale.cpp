// The window at scale (issue 15, deliverable 8): a run database of 10,000 candidates over 30
// tasks and 20 runs, written through the real RunStore API, then the window on it:
//   - open: MainWindow constructed, database opened, shown, until its first paint (goal < 1 s),
//     and until the Results report is on the page;
//   - every page switch: showPage() until that page has painted;
//   - the longest event-loop stall while a run streams into that database (goal < 100 ms): a
//     5 ms timer's largest gap while a zero-shot run over 10 tasks streams its answers from a
//     scripted OpenAI-compatible server and the fake worker evaluates them; the Monitor follows.
// Beside the wall-clock numbers, the GUI thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) for the
// open and the largest between two ticks: on a shared host the wall clock also counts other
// processes' turns. --trace-ms N lists every event that took N ms or longer on stderr.
// Prints a Markdown report (machine, commit, date, numbers) to stdout. Not a test: numbers, no
// pass/fail. Run under QT_QPA_PLATFORM=offscreen or Xvfb (xvfb-run).
//
//   kwb-bench-window-scale [--db PATH] [--rebuild] [--trace-ms N]

#include "app/analysispages.h"
#include "app/mainwindow.h"
#include "app/runs/launchpage.h"
#include "app/runs/resultspage.h"
#include "app/runs/runmanager.h"
#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/protocol/devicefacts.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"
#include "scriptedllmserver.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QSysInfo>
#include <QThread>
#include <QTimer>

#include <cstdio>
#include <ctime>

using namespace kwb;

namespace {

constexpr int kRuns = 20;
constexpr int kTasks = 30;
constexpr int kCandidates = 10000;

QStringList taskIds()
{
    QStringList ids;
    for (int level = 1; level <= 3; ++level)
        for (int i = 1; i <= 10; ++i)
            ids << QStringLiteral("L%1/%2").arg(level).arg(i);
    return ids;
}

/// The 20 runs: the five regimes, the agent's four ablations and sweeps of n, so each has its own name.
Regime regimeOfRun(int r)
{
    const QStringList names = Regime::builtinNames();
    if (r < names.size())
        return *Regime::builtin(names.at(r));
    Regime agent = *Regime::builtin(QStringLiteral("agent"));
    const QStringList off = {QStringLiteral("best_of_n"), QStringLiteral("feedback_analyzer"),
                             QStringLiteral("monotone"), QStringLiteral("competence_matched")};
    const int k = r - int(names.size());
    if (k < off.size())
        return agent.withAblations(Ablations::fromOffNames({off.at(k)}));
    agent.n = 2 + (k - int(off.size())); // n = 2 … 12
    return agent;
}

QString answerText(const QString& task, int turn, int sample)
{
    // About the size of a real answer (3 KB): a kernel and a forward.
    QString body;
    for (int i = 0; i < 40; ++i)
        body += QStringLiteral("    y[i + %1] = fmaxf(x[i + %1] * s + b[(i + %1) %% c], 0.f); // line %1\n").arg(i);
    return QStringLiteral(
               "Plan for %1, turn %2 sample %3.\n\n```cuda\nextern \"C\" __global__ void k(float* y, const float* x, "
               "const float* b, float s, int c, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
               "    if (i >= n) return;\n%4}\n```\n\n```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> "
               "Tensor:\n"
               "    y = torch.empty_like(x)\n    kernels.k(y, x, p['b'], 1.0, 16, x.numel())\n    return y\n```\n")
        .arg(task)
        .arg(turn)
        .arg(sample)
        .arg(body);
}

QJsonObject evaluation(int k, const QString& status, const QJsonObject& gpu)
{
    Q_UNUSED(gpu);
    const double ref = 1.0 + (k % 97) * 0.05;
    const double cand = ref / (0.6 + (k % 13) * 0.08);
    QJsonObject r{{QStringLiteral("status"), status},
                  {QStringLiteral("stage"), QStringLiteral("done")},
                  {QStringLiteral("compile"),
                   QJsonObject{{QStringLiteral("ok"), status != QLatin1String("compile_error")},
                               {QStringLiteral("log"), status == QLatin1String("compile_error")
                                                           ? QStringLiteral("kernel.cu(3): error: expected a \";\"")
                                                           : QString()},
                               {QStringLiteral("ms"), 35.0},
                               {QStringLiteral("arch"), QStringLiteral("sm_90")}}},
                  {QStringLiteral("custom_launches"), 1},
                  {QStringLiteral("flags"), QJsonArray()},
                  {QStringLiteral("profile"), QJsonObject{{QStringLiteral("name"), QStringLiteral("kernelbench-fp32")},
                                                          {QStringLiteral("atol"), 1e-4},
                                                          {QStringLiteral("rtol"), 1e-4}}}};
    if (status == QLatin1String("correct") || status == QLatin1String("incorrect")) {
        r.insert(QStringLiteral("correctness"),
                 QJsonObject{{QStringLiteral("trials"), 5},
                             {QStringLiteral("passed"), status == QLatin1String("correct") ? 5 : 2},
                             {QStringLiteral("max_abs_diff"), status == QLatin1String("correct") ? 2e-6 : 0.4},
                             {QStringLiteral("max_rel_diff"), 1e-5},
                             {QStringLiteral("atol"), 1e-4},
                             {QStringLiteral("rtol"), 1e-4}});
    }
    if (status == QLatin1String("correct")) {
        const auto side = [](double ms) {
            return QJsonObject{{QStringLiteral("mean_ms"), ms},       {QStringLiteral("median_ms"), ms},
                               {QStringLiteral("std_ms"), ms * 0.01}, {QStringLiteral("min_ms"), ms * 0.98},
                               {QStringLiteral("max_ms"), ms * 1.03}, {QStringLiteral("trials"), 100}};
        };
        r.insert(QStringLiteral("timing"),
                 QJsonObject{{QStringLiteral("candidate"), side(cand)}, {QStringLiteral("reference"), side(ref)}});
        r.insert(QStringLiteral("speedup"), ref / cand);
    }
    return r;
}

QJsonObject h200()
{
    return QJsonObject{{QStringLiteral("name"), QStringLiteral("NVIDIA H200")},
                       {QStringLiteral("available"), true},
                       {QStringLiteral("arch"), QStringLiteral("sm_90")},
                       {QStringLiteral("sm_count"), 132},
                       {QStringLiteral("sm_clock_khz"), 1980000},
                       {QStringLiteral("memory_clock_khz"), 3201000},
                       {QStringLiteral("memory_bus_bits"), 6016},
                       {QStringLiteral("memory_bytes"), 150109880320.0},
                       {QStringLiteral("hbm_theoretical_gbs"), 4814.304}};
}

bool buildDatabase(const QString& path, double* seconds)
{
    QElapsedTimer clock;
    clock.start();
    QFile::remove(path);
    RunStore store;
    if (!store.open(path)) {
        std::fprintf(stderr, "cannot open %s: %s\n", qPrintable(path), qPrintable(store.errorString()));
        return false;
    }
    const QStringList tasks = taskIds();
    const QStringList statuses = {QStringLiteral("correct"),       QStringLiteral("incorrect"),
                                  QStringLiteral("compile_error"), QStringLiteral("correct"),
                                  QStringLiteral("runtime_error"), QStringLiteral("correct")};
    int k = 0;
    for (int r = 0; r < kRuns; ++r) {
        const Regime regime = regimeOfRun(r);
        RunConfig config;
        config.model = QStringLiteral("bench-model");
        config.protocolProfile = QStringLiteral("kernelbench-fp32");
        config.gpu = decodeDeviceFacts(h200());
        config.regime = StoredRegime::of(regime);
        config.tasks = tasks;
        config.taskSpec = QStringLiteral("L1:1-10,L2:1-10,L3:1-10");
        const qint64 run =
            store.createRun(QStringLiteral("%1 bench").arg(regime.name), regime.name, config.toJson()).value_or(0);
        // 500 candidates per run: 30 tasks, then turns of samples until the run's share is used.
        const int perRun = kCandidates / kRuns;
        for (int c = 0; c < perRun; ++c, ++k) {
            const QString task = tasks.at(c % kTasks);
            const int slot = c / kTasks; // 0 … 16
            const int turn = 1 + slot / 6, sample = slot % 6;
            const qint64 prompt =
                store
                    .addPrompt(PromptRecord{0, run, task, turn, sample, QStringLiteral("generator"),
                                            QStringLiteral("Write a CUDA kernel for %1.").arg(task), QString()})
                    .value_or(0);
            ResponseRecord response;
            response.promptId = prompt;
            response.text = answerText(task, turn, sample);
            response.tokensIn = 1800;
            response.tokensOut = 700;
            response.latencyMs = 9000;
            const qint64 responseId = store.addResponse(response).value_or(0);
            CandidateRecord cand;
            cand.responseId = responseId;
            cand.task = task;
            cand.turn = turn;
            cand.sample = sample;
            const qint64 candidateId = store.addCandidate(cand).value_or(0);
            if (!store.addEvaluation(candidateId,
                                     evaluation(k, statuses.at((k * 7 + r) % statuses.size()), config.gpu.raw))) {
                std::fprintf(stderr, "store: %s\n", qPrintable(store.errorString()));
                return false;
            }
        }
        store.setRunStatus(run, RunStatus::Finished);
    }
    *seconds = clock.elapsed() / 1000.0;
    return true;
}

/// CPU time of the calling thread, in ms: what the GUI thread itself spent, whatever else the
/// machine ran meanwhile (wall-clock gaps on a shared host also count other processes' turns).
double threadCpuMs()
{
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/// With --trace-ms N: every top-level event whose handling took N ms or longer of wall clock, on
/// stderr with the GUI thread's CPU time for it (receiver class, object name, event type), to
/// find what stalls the GUI thread.
class TracingApplication : public QApplication
{
public:
    using QApplication::QApplication;
    int traceMs = -1;
    bool notify(QObject* receiver, QEvent* event) override
    {
        if (traceMs < 0 || m_depth > 0)
            return QApplication::notify(receiver, event);
        ++m_depth;
        QElapsedTimer t;
        t.start();
        const double cpu0 = threadCpuMs();
        const QEvent::Type type = event->type(); // the event may be gone after delivery
        const QByteArray cls = receiver->metaObject()->className();
        const QString name = receiver->objectName();
        const bool result = QApplication::notify(receiver, event);
        --m_depth;
        if (t.elapsed() >= traceMs)
            std::fprintf(stderr, "slow event: %lld ms (%.0f ms CPU), %s '%s', event type %d\n", qlonglong(t.elapsed()),
                         threadCpuMs() - cpu0, cls.constData(), qPrintable(name), int(type));
        return result;
    }

private:
    int m_depth = 0;
};

/// Paint events of one widget, counted.
class PaintWatch : public QObject
{
public:
    int paints = 0;
    bool eventFilter(QObject*, QEvent* event) override
    {
        if (event->type() == QEvent::Paint)
            ++paints;
        return false;
    }
};

QString gitCommit()
{
    QProcess git;
    git.start(QStringLiteral("git"), {QStringLiteral("-C"), QStringLiteral(KWB_SOURCE_DIR), QStringLiteral("rev-parse"),
                                      QStringLiteral("--short"), QStringLiteral("HEAD")});
    git.waitForFinished(5000);
    return QString::fromUtf8(git.readAllStandardOutput()).trimmed();
}

QString cpuName()
{
    QFile f(QStringLiteral("/proc/cpuinfo"));
    if (f.open(QIODevice::ReadOnly))
        for (const QByteArray& line : f.readAll().split('\n'))
            if (line.startsWith("model name"))
                return QString::fromUtf8(line.mid(line.indexOf(':') + 1)).trimmed();
    return QSysInfo::currentCpuArchitecture();
}

} // namespace

int main(int argc, char** argv)
{
    TracingApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("kwb-bench-window-scale"));
    QStandardPaths::setTestModeEnabled(true); // settings out of the user's
    QCommandLineParser parser;
    parser.addOption({QStringLiteral("db"), QStringLiteral("the database (built when missing)"), QStringLiteral("path"),
                      QStringLiteral("/tmp/kwb-bench-window-scale.db")});
    parser.addOption({QStringLiteral("rebuild"), QStringLiteral("write the database again")});
    parser.addOption({QStringLiteral("trace-ms"),
                      QStringLiteral("print every event that took this long or longer to stderr"),
                      QStringLiteral("ms")});
    parser.process(app);
    const QString db = parser.value(QStringLiteral("db"));
    if (parser.isSet(QStringLiteral("trace-ms")))
        app.traceMs = parser.value(QStringLiteral("trace-ms")).toInt();

    double buildS = -1;
    if (parser.isSet(QStringLiteral("rebuild")) || !QFileInfo::exists(db)) {
        if (!buildDatabase(db, &buildS))
            return 1;
    }
    {
        RunStore store;
        store.open(db);
        int evaluations = 0;
        for (const RunInfo& run : store.runs())
            evaluations += int(store.evaluations(run.id).size());
        std::printf("database: %s, %lld runs, %d evaluations, %.1f MB%s\n", qPrintable(db),
                    qlonglong(store.runs().size()), evaluations, QFileInfo(db).size() / 1e6,
                    buildS >= 0 ? qPrintable(QStringLiteral(", written in %1 s").arg(buildS, 0, 'f', 1)) : "");
    }

    // Open to first paint.
    QElapsedTimer clock;
    clock.start();
    const double openCpu0 = threadCpuMs();
    auto* window = new app::MainWindow(QStringLiteral(KWB_FAKEWORKER));
    PaintWatch windowPaints;
    window->installEventFilter(&windowPaints);
    const qint64 constructedMs = clock.elapsed();
    window->resize(1280, 720);
    window->openDatabase(db);
    const qint64 openedMs = clock.elapsed();
    window->showPage(QStringLiteral("results"));
    window->show();
    const qint64 shownMs = clock.elapsed();
    while (windowPaints.paints == 0 && clock.elapsed() < 30000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    const qint64 firstPaintMs = clock.elapsed();
    const double firstPaintCpuMs = threadCpuMs() - openCpu0;
    if (app.traceMs >= 0)
        std::fprintf(stderr,
                     "phase: constructed %lld ms, database opened %lld ms, shown %lld ms, first paint %lld ms\n",
                     qlonglong(constructedMs), qlonglong(openedMs), qlonglong(shownMs), qlonglong(firstPaintMs));
    auto* results = qobject_cast<app::ResultsPage*>(window->page(QStringLiteral("results")));
    while ((!results->report() || results->isBuilding()) && clock.elapsed() < 120000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    const qint64 reportMs = clock.elapsed();

    // Every page switch, until the page painted.
    QList<QPair<QString, double>> switches;
    double diffLoadedMs = -1;
    int diffCandidates = 0;
    for (const QString& name : window->pageNames()) {
        QWidget* page = window->page(name);
        PaintWatch watch;
        page->installEventFilter(&watch);
        QElapsedTimer t;
        t.start();
        window->showPage(name);
        while (watch.paints == 0 && t.elapsed() < 10000)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 1);
        switches.append({name, t.nsecsElapsed() / 1e6});
        page->removeEventFilter(&watch);
        // The Diff page paints "Loading…" and reads in the background: also until its pickers
        // and pair are in.
        if (auto* diff = qobject_cast<app::DiffPage*>(page)) {
            while (diff->isLoading() && t.elapsed() < 30000)
                QCoreApplication::processEvents(QEventLoop::AllEvents, 1);
            diffLoadedMs = t.nsecsElapsed() / 1e6;
            diffCandidates = int(diff->candidates().size());
        }
    }

    // A run streaming into the big database, the Monitor in front; the longest gap of a 5 ms timer.
    test::ScriptedLlmServer server;
    if (!server.start()) {
        std::fprintf(stderr, "cannot listen\n");
        return 1;
    }
    test::ScriptedLlmServer::Reply reply;
    reply.texts = {answerText(QStringLiteral("bench"), 1, 0) + QStringLiteral("\nstatus: correct\n")};
    reply.chunkChars = 24;
    reply.chunkDelayMs = 5;
    server.setDefaultReply(reply);
    auto* launch = qobject_cast<app::LaunchPage*>(window->page(QStringLiteral("launch")));
    launch->setDatabasePath(db);
    launch->setEndpoint(server.baseUrl().toString());
    launch->setModel(QStringLiteral("m"));
    launch->setSelectedTasks(taskIds().mid(0, 10));
    window->showPage(QStringLiteral("monitor"));
    qint64 longestGapMs = 0, ticks = 0;
    double longestCpuGapMs = 0, lastCpu = threadCpuMs();
    QElapsedTimer gap;
    gap.start();
    QTimer probe;
    probe.setInterval(5);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        longestGapMs = qMax(longestGapMs, gap.elapsed());
        const double cpu = threadCpuMs();
        longestCpuGapMs = qMax(longestCpuGapMs, cpu - lastCpu);
        lastCpu = cpu;
        gap.restart();
        ++ticks;
    });
    if (app.traceMs >= 0)
        std::fprintf(stderr, "phase: run streams\n");
    QElapsedTimer runClock;
    runClock.start();
    bool over = false;
    const bool started = launch->start();
    probe.start();
    gap.restart();
    lastCpu = threadCpuMs();
    QObject::connect(window->findChild<app::RunManager*>(), &app::RunManager::sessionFinished, [&] { over = true; });
    while (started && !over && runClock.elapsed() < 300000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    probe.stop();
    const qint64 runMs = runClock.elapsed();

    std::printf("\n## Window at scale: %s\n\n", qPrintable(QSysInfo::prettyProductName()));
    std::printf("- commit %s, %s, CPU %s (%d threads), Qt %s, platform %s\n", qPrintable(gitCommit()),
                qPrintable(QDateTime::currentDateTimeUtc().toString(Qt::ISODate)), qPrintable(cpuName()),
                QThread::idealThreadCount(), qVersion(), qPrintable(QGuiApplication::platformName()));
    std::printf("- open to first paint: %lld ms (goal < 1000 ms), of it %.0f ms of GUI-thread CPU; Results report on "
                "the page: %lld ms\n",
                qlonglong(firstPaintMs), firstPaintCpuMs, qlonglong(reportMs));
    std::printf("\n| page | switch to painted, ms |\n|---|---:|\n");
    for (const auto& s : std::as_const(switches))
        std::printf("| %s | %.1f |\n", qPrintable(s.first), s.second);
    if (diffLoadedMs >= 0)
        std::printf("\n- diff: switch until its %d candidates and the default pair are on the page: %.1f ms\n",
                    diffCandidates, diffLoadedMs);
    std::printf("\n- run streaming into the database (10 tasks, zero-shot, fake worker, %s): %lld ms, "
                "longest event-loop stall %lld ms over %lld ticks of a 5 ms timer (goal < 100 ms); "
                "most GUI-thread CPU between two ticks %.0f ms\n",
                started ? "finished" : "did not start", qlonglong(runMs), qlonglong(longestGapMs), qlonglong(ticks),
                longestCpuGapMs);
    delete window;
    return 0;
}

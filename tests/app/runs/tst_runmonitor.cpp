// RunMonitorPage and RunSession during real RunController runs against the scripted
// OpenAI-compatible server (streaming) and the fake worker: rows appear as units are asked and
// evaluated, progress moves, the selected unit's text streams in and every streamed piece lands on
// the unit whose stored answer it is; a hanging candidate does not stop the event loop; Pause waits
// for the request in flight and Resume finishes without asking the model again; a failed request
// and a time-out show in the problem list; a stored run opens with its problems; while a live run
// streams, the tree on screen is the model's rows once each, in place, unclipped, with no stale
// paint, and a new run replaces everything of the one before.

#include "app/runs/runmanager.h"
#include "app/runs/runmonitorpage.h"
#include "app/runs/runsession.h"
#include "app/runs/runtreemodel.h"
#include "core/protocol/evaluationresult.h"
#include "core/store/runstore.h"
#include "core/workers/evaluationqueue.h"
#include "fakeworkerenvironment.h"
#include "grabcheck.h"
#include "runfixture.h"
#include "scriptedllmserver.h"

#include <QCheckBox>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>

#include <functional>
#include <memory>

using namespace kwb;
using namespace kwb::app;
using kwb::test::ScriptedLlmServer;

namespace {

QString answer(const QString& tag, const QString& status, const QString& extra = QString())
{
    return QStringLiteral("%1 status: %2 %3\n\n```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n"
                          "```\n\n```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n"
                          "```\n")
        .arg(tag, status, extra);
}

ScriptedLlmServer::Reply streamed(const QString& text, int chunkDelayMs = 10)
{
    ScriptedLlmServer::Reply r;
    r.texts = {text};
    r.chunkChars = 12;
    r.chunkDelayMs = chunkDelayMs;
    return r;
}

} // namespace

class TestRunMonitor : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<ScriptedLlmServer> m_server;
    int m_dbCount = 0;

    RunSessionEnvironment environment()
    {
        return kwb::test::fakeWorkerEnvironment<RunSessionEnvironment>(
            m_dir.filePath(QStringLiteral("run%1.db").arg(++m_dbCount)));
    }

    RunPlan plan(const QString& regime, const QStringList& tasks, int n = 0, int turns = 0, double timeoutS = 60)
    {
        RunRequest request;
        request.taskIds = tasks;
        request.regime = regime;
        request.n = n;
        request.turns = turns;
        request.endpoint = m_server->baseUrl().toString();
        request.model = QStringLiteral("m");
        request.timeoutS = timeoutS;
        request.promptsDir = QStringLiteral(KWB_PROMPTS_DIR);
        QString error;
        const auto p = planRun(request, &error);
        if (!p)
            qFatal("plan: %s", qPrintable(error));
        return *p;
    }

    template <typename T>
    static T* child(QWidget& page, const char* name)
    {
        T* widget = page.findChild<T*>(QString::fromLatin1(name));
        if (!widget)
            qFatal("no widget %s", name);
        return widget;
    }

    static bool waitFinished(RunSession* session, int ms = 60000)
    {
        if (session->isOver())
            return true;
        QSignalSpy finished(session, &RunSession::finished);
        return finished.wait(ms);
    }

    /// What is wrong with the tree as the user sees it, empty when nothing: what is on screen is
    /// what a fresh paint of the tree shows, so no row painted before an insert stays where another
    /// now is; the rows the view
    /// walks (indexBelow) are the model's rows under expanded parents, each once and in order;
    /// each row lies right under the one before and is the row indexAt() finds there; each row's
    /// item text fits its cell (an elided "L1/…" over "Turn 2", or "Sa…" twice, reads as
    /// overlapping and repeated rows).
    static QString viewProblems(QTreeView* tree, const RunTreeModel* model)
    {
        // What is on screen (the window's backing store) against a fresh paint of the viewport.
        // Posted and timed events (layouts, resizes, the platform's paint request, which waits for
        // the next frame) are let run, socket data (model text, worker replies) is held back:
        // a paint still to come shows within a second, a row nothing will repaint never does.
        QWidget* viewport = tree->viewport();
        const auto onScreenIsFresh = [viewport] {
            const QPoint at = viewport->mapTo(viewport->window(), QPoint(0, 0));
            const qreal dpr = viewport->devicePixelRatioF();
            const QImage onScreen =
                viewport->window()
                    ->windowHandle()
                    ->screen()
                    ->grabWindow(viewport->window()->winId(), at.x(), at.y(), viewport->width(), viewport->height())
                    .toImage()
                    .convertToFormat(QImage::Format_RGB32);
            const QImage fresh = viewport->grab().toImage().convertToFormat(QImage::Format_RGB32);
            return onScreen.size() == fresh.size() * dpr && onScreen == fresh.scaled(onScreen.size());
        };
        QElapsedTimer settle;
        settle.start();
        bool fresh = false;
        do {
            QCoreApplication::processEvents(QEventLoop::ExcludeSocketNotifiers);
            fresh = onScreenIsFresh();
            if (!fresh)
                QThread::msleep(5);
        } while (!fresh && settle.elapsed() < 1000);
        QStringList problems;
        QList<QModelIndex> expected;
        std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
            for (int r = 0; r < model->rowCount(parent); ++r) {
                const QModelIndex index = model->index(r, RunTreeModel::ItemColumn, parent);
                expected << index;
                if (tree->isExpanded(index))
                    walk(index);
            }
        };
        walk(QModelIndex());
        const auto name = [](const QModelIndex& index) {
            QStringList path;
            for (QModelIndex i = index; i.isValid(); i = i.parent())
                path.prepend(i.siblingAtColumn(RunTreeModel::ItemColumn).data().toString());
            return path.join(QLatin1Char('/'));
        };
        QList<QModelIndex> shown;
        QSet<QString> seen;
        for (QModelIndex i = model->index(0, RunTreeModel::ItemColumn); i.isValid() && shown.size() <= expected.size();
             i = tree->indexBelow(i)) {
            shown << i;
            if (seen.contains(name(i)))
                problems << QStringLiteral("row %1 twice").arg(name(i));
            seen.insert(name(i));
        }
        if (shown != expected) {
            QStringList a, b;
            for (const QModelIndex& i : std::as_const(shown))
                a << name(i);
            for (const QModelIndex& i : std::as_const(expected))
                b << name(i);
            problems << QStringLiteral("view rows [%1], model rows [%2]")
                            .arg(a.join(QLatin1String(", ")), b.join(QLatin1String(", ")));
        }
        const QFontMetrics metrics(tree->font());
        QRect previous;
        for (const QModelIndex& index : std::as_const(shown)) {
            const QRect rect = tree->visualRect(index);
            if (previous.isValid() && rect.top() != previous.bottom() + 1)
                problems << QStringLiteral("%1 at y %2, the row above ends at %3")
                                .arg(name(index))
                                .arg(rect.top())
                                .arg(previous.bottom());
            if (rect.isValid() && tree->viewport()->rect().contains(rect.center()) &&
                tree->indexAt(rect.center()) != index)
                problems << QStringLiteral("indexAt(%1) is not %2").arg(rect.center().y()).arg(name(index));
            const QString text = index.data().toString();
            if (metrics.horizontalAdvance(text) > rect.width())
                problems << QStringLiteral("%1 clipped: %2 px in %3")
                                .arg(name(index))
                                .arg(metrics.horizontalAdvance(text))
                                .arg(rect.width());
            previous = rect;
        }
        if (!fresh)
            problems << QStringLiteral("the tree on screen is not what a fresh paint shows (stale rows)");
        return problems.join(QLatin1String("; "));
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void problemsFollowTheStatusTable()
    {
        const auto record = [](const char* status, bool workerResponse) {
            EvaluationRecord e;
            e.status = QString::fromLatin1(status);
            e.result = workerResponse ? QJsonObject{{QStringLiteral("id"), 1},
                                                    {QStringLiteral("type"), QStringLiteral("evaluate")},
                                                    {QStringLiteral("ok"), true},
                                                    {QStringLiteral("status"), e.status}}
                                      : failureResult(e.status, QStringLiteral("why"));
            return e;
        };
        // The worker's verdicts on a candidate are the model's business, not the run's problems.
        for (const char* status :
             {"correct", "incorrect", "compile_error", "format_error", "runtime_error", "rejected"})
            QVERIFY2(!isRunProblem(record(status, true)), status);
        // The machine's failures (by the table's category) are, from the worker or the supervisor.
        QVERIFY(isRunProblem(record("no_device", true)));
        QVERIFY(isRunProblem(record("worker_lost", false)));
        QVERIFY(isRunProblem(record("start_failed", false)));
        QVERIFY(isRunProblem(record("protocol_error", false)));
        QVERIFY(isRunProblem(record("bad_request", false)));
        QVERIFY(isRunProblem(record("some_future_status", true)));
        // A request the supervisor had to end is worth a look, though the category says the candidate's.
        QVERIFY(isRunProblem(record("timeout", false)));
        QVERIFY(isRunProblem(record("crashed", false)));
        QVERIFY(!isRunProblem(record("cancelled", false))); // the user's own act
    }

    void init()
    {
        m_server = std::make_unique<ScriptedLlmServer>();
        QVERIFY(m_server->start());
        m_server->setDefaultReply(streamed(answer(QStringLiteral("default"), QStringLiteral("correct"))));
    }

    void cleanup() { m_server.reset(); }

    void emptyState()
    {
        RunMonitorPage page(nullptr);
        QVERIFY(child<QLabel>(page, "monitorEmpty")->isVisibleTo(&page));
        QVERIFY(child<QLabel>(page, "monitorEmpty")->text().contains(QStringLiteral("Launch page")));
    }

    void liveRunShowsRowsStreamingAndProgress()
    {
        m_server->setDefaultReply(
            streamed(answer(QStringLiteral("streamed answer with enough text to arrive in many pieces"),
                            QStringLiteral("correct")),
                     15));
        RunManager manager;
        RunMonitorPage page(&manager);
        page.resize(1280, 800);
        page.show();
        RunSessionEnvironment env = environment();
        env.maxTasksInFlight = 1; // one task after the other, so progress passes 1/2
        RunTreeModel* model = page.treeModel();
        int resetsAfterRows = 0;
        bool rowsSeen = false;
        connect(model, &QAbstractItemModel::modelReset, this, [&] { resetsAfterRows += rowsSeen ? 1 : 0; });
        connect(model, &QAbstractItemModel::rowsInserted, this, [&] { rowsSeen = true; });
        QSignalSpy inserted(model, &QAbstractItemModel::rowsInserted);
        QVERIFY(
            manager.submit(plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1"), QStringLiteral("L2/1")}), env));
        RunSession* session = manager.current();
        QCOMPARE(page.session(), session);

        // While a unit generates, the text view shows what has arrived of its answer.
        auto* text = child<QPlainTextEdit>(page, "modelText");
        auto* tree = child<QTreeView>(page, "runTree");
        int partialSeen = 0;
        QList<int> progressSeen;
        connect(session, &RunSession::textStreamed, this, [&](const UnitKey& unit, const QString&) {
            const QModelIndex current = tree->currentIndex();
            if (model->unitKey(current) == unit &&
                current.siblingAtColumn(RunTreeModel::StatusColumn).data().toString() ==
                    QStringLiteral("generating…") &&
                !text->toPlainText().isEmpty() &&
                text->toPlainText() == current.data(RunTreeModel::TextRole).toString())
                ++partialSeen;
        });
        auto* bar = child<QProgressBar>(page, "progressBar");
        connect(session, &RunSession::progressChanged, this, [&] { progressSeen << bar->value(); });

        QVERIFY(waitFinished(session));
        QCOMPARE(session->state(), RunSession::State::Finished);
        QVERIFY2(partialSeen >= 3, qPrintable(QString::number(partialSeen)));
        QVERIFY2(progressSeen.contains(1) && progressSeen.last() == 2,
                 qPrintable(QStringLiteral("%1").arg(progressSeen.size())));
        QCOMPARE(bar->value(), 2);
        QCOMPARE(bar->maximum(), 2);
        QVERIFY2(page.progressText().startsWith(QStringLiteral("2/2 tasks · 2 candidates evaluated (2 correct)")),
                 qPrintable(page.progressText()));

        // Rows came one by one: no reset once the first row was there.
        QCOMPARE(resetsAfterRows, 0);
        QVERIFY(inserted.size() >= 6); // two tasks, their turns and their samples
        QCOMPARE(model->taskCount(), 2);
        const QModelIndex l11 = model->indexOfTask(QStringLiteral("L1/1"));
        QCOMPARE(l11.siblingAtColumn(RunTreeModel::StatusColumn).data().toString(), QStringLiteral("correct"));
        // The speed-up with its 95 % interval, as the recorded H200 answer has it.
        QCOMPARE(l11.siblingAtColumn(RunTreeModel::SpeedupColumn).data().toString(),
                 QStringLiteral("1.071× [1.070–1.072]"));

        // The selected (last followed) unit shows the stored answer, its compile log and evaluation.
        const std::optional<UnitKey> selected = model->unitKey(tree->currentIndex());
        QVERIFY(selected);
        RunStore store;
        QVERIFY(store.open(env.databasePath));
        QString stored;
        for (const UnitResponse& r : store.responses(session->runId()))
            if (r.unit == *selected)
                stored = r.response.text;
        QVERIFY(!stored.isEmpty());
        QCOMPARE(text->toPlainText(), stored);
        // The evaluation in words; the worker's JSON behind the toggle.
        const QString summary = child<QPlainTextEdit>(page, "evaluationText")->toPlainText();
        QVERIFY2(summary.startsWith(QStringLiteral("Status: correct")), qPrintable(summary));
        QVERIFY2(summary.contains(
                     QStringLiteral("Speed-up: 1.071× [1.070–1.072] over the reference (95 % interval in brackets)")),
                 qPrintable(summary));
        QVERIFY(summary.contains(QStringLiteral("atol + rtol·|ref|")));
        QVERIFY(!summary.contains(QStringLiteral("\"status\"")));
        child<QCheckBox>(page, "rawJsonToggle")->setChecked(true);
        QVERIFY(child<QPlainTextEdit>(page, "evaluationText")
                    ->toPlainText()
                    .contains(QStringLiteral("\"status\": \"correct\"")));
        child<QCheckBox>(page, "rawJsonToggle")->setChecked(false);
        QVERIFY(child<QLabel>(page, "unitHeader")->text().contains(QStringLiteral("speedup 1.071× [1.070–1.072]")));
        QCOMPARE(page.problemCount(), 0);

        const QImage image = kwb::test::grabPage(&page, QStringLiteral("runmonitorpage"));
        QVERIFY(!image.isNull());
        QVERIFY(kwb::test::distinctColours(image) > 8);
    }

    void streamedTextLandsOnItsUnit_data()
    {
        QTest::addColumn<QString>("regime");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("turns");
        QTest::addColumn<QString>("firstStatus");
        QTest::newRow("iterative: a retry on turn 2")
            << QStringLiteral("iterative") << 2 << 2 << QStringLiteral("compile_error");
        QTest::newRow("agent: notes roles, then samples")
            << QStringLiteral("agent") << 2 << 1 << QStringLiteral("correct");
    }

    void streamedTextLandsOnItsUnit()
    {
        QFETCH(QString, regime);
        QFETCH(int, n);
        QFETCH(int, turns);
        QFETCH(QString, firstStatus);
        // Every HTTP call gets a text of its own, so a piece given to the wrong unit shows.
        for (int i = 0; i < 40; ++i)
            m_server->enqueue(streamed(
                answer(QStringLiteral("reply-%1").arg(i), i < 4 ? firstStatus : QStringLiteral("correct")), 3));
        RunSession session(plan(regime, {QStringLiteral("L1/1"), QStringLiteral("L2/1")}, n, turns), environment());
        QHash<UnitKey, QString> streamedText;
        int started = 0;
        connect(&session, &RunSession::textStreamed, this,
                [&](const UnitKey& unit, const QString& chunk) { streamedText[unit] += chunk; });
        connect(&session, &RunSession::generationStarted, this, [&] { ++started; });
        QStringList problems;
        connect(&session, &RunSession::problem, this, [&](const RunProblem& p) {
            if (p.error) // the fake worker has no `profile`: a warning for the agent's tasks
                problems << p.message;
        });
        session.start();
        QVERIFY(waitFinished(&session));
        QVERIFY2(session.state() == RunSession::State::Finished, qPrintable(problems.join(QLatin1Char('\n'))));
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));

        RunStore store;
        QVERIFY(store.open(session.environment().databasePath));
        const QList<UnitResponse> responses = store.responses(session.runId());
        QVERIFY(responses.size() >= 4);
        QCOMPARE(started, int(responses.size()));
        QCOMPARE(streamedText.size(), responses.size());
        for (const UnitResponse& r : responses)
            QVERIFY2(streamedText.value(r.unit) == r.response.text,
                     qPrintable(QStringLiteral("%1 turn %2 %3 sample %4: streamed \"%5\", stored \"%6\"")
                                    .arg(r.unit.task)
                                    .arg(r.unit.turn)
                                    .arg(r.unit.role)
                                    .arg(r.unit.sample)
                                    .arg(streamedText.value(r.unit).left(12), r.response.text.left(12))));
        if (regime == QLatin1String("iterative")) {
            QCOMPARE(store.evaluations(session.runId()).size(), 8); // 2 tasks × 2 samples × 2 turns
        } else {
            QSet<QString> roles;
            for (const UnitResponse& r : responses)
                roles.insert(r.unit.role);
            QCOMPARE(roles, (QSet<QString>{QStringLiteral("analyzer"), QStringLiteral("researcher"),
                                           QStringLiteral("generator")}));
        }
    }

    void hangingCandidateDoesNotBlockTheUi()
    {
        // The fake worker hangs on this answer; the evaluation's time-out (2 s) ends it.
        m_server->setDefaultReply(
            streamed(answer(QStringLiteral("hangs"), QStringLiteral("correct"), QStringLiteral("fake: hang"))));
        RunManager manager;
        RunMonitorPage page(&manager);
        page.resize(1280, 800);
        page.show();
        QVERIFY(manager.submit(plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1")}, 0, 0, 2.0), environment()));
        RunSession* session = manager.current();
        // Wait until the candidate is with the worker.
        QTRY_VERIFY_WITH_TIMEOUT(session->evaluationQueue() && session->evaluationQueue()->pendingCount() == 1, 20000);
        int ticks = 0;
        QTimer ticker;
        connect(&ticker, &QTimer::timeout, this, [&ticks] { ++ticks; });
        ticker.start(25);
        const QString before = page.progressText();
        QStringList texts{before};
        QTimer sampler;
        connect(&sampler, &QTimer::timeout, this, [&] {
            if (texts.last() != page.progressText())
                texts << page.progressText();
        });
        sampler.start(100);
        QVERIFY(waitFinished(session, 30000));
        ticker.stop();
        QVERIFY2(ticks >= 40, qPrintable(QString::number(ticks)));             // ~2 s at 25 ms while the worker hung
        QVERIFY2(texts.size() >= 2, qPrintable(texts.join(QLatin1Char('|')))); // the elapsed time kept moving
        QCOMPARE(session->state(), RunSession::State::Finished);
        const QModelIndex task = page.treeModel()->indexOfTask(QStringLiteral("L1/1"));
        QCOMPARE(task.siblingAtColumn(RunTreeModel::StatusColumn).data().toString(), QStringLiteral("timeout"));
        auto* problems = child<QTreeWidget>(page, "problemList");
        QCOMPARE(problems->topLevelItemCount(), 1);
        QCOMPARE(problems->topLevelItem(0)->text(1), QStringLiteral("L1/1"));
        QCOMPARE(problems->topLevelItem(0)->text(2), QStringLiteral("evaluation"));
        QVERIFY(problems->topLevelItem(0)->text(3).contains(QStringLiteral("timeout")));
        QVERIFY(child<QLabel>(page, "problemsTitle")->text().startsWith(QStringLiteral("Problems: 1 error")));
    }

    void pauseWaitsForTheRequestThenResumes()
    {
        ScriptedLlmServer::Reply slow = streamed(answer(QStringLiteral("first"), QStringLiteral("correct")), 0);
        slow.delayMs = 800;
        m_server->enqueue(slow);
        RunManager manager;
        RunMonitorPage page(&manager);
        page.resize(1280, 800);
        page.show();
        RunSessionEnvironment env = environment();
        env.maxTasksInFlight = 1;
        QVERIFY(
            manager.submit(plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1"), QStringLiteral("L2/1")}), env));
        RunSession* session = manager.current();
        QTRY_COMPARE_WITH_TIMEOUT(session->requestsInFlight(), 1, 20000);
        auto* pause = child<QPushButton>(page, "monitorPause");
        QVERIFY(pause->isEnabled());
        QTest::mouseClick(pause, Qt::LeftButton);
        QCOMPARE(session->state(), RunSession::State::Pausing);
        QTRY_COMPARE_WITH_TIMEOUT(session->state(), RunSession::State::Paused, 20000);
        QCOMPARE(m_server->requests().size(), 1); // the answer in flight was waited for, nothing new asked
        QCOMPARE(pause->text(), QStringLiteral("Resume"));
        QVERIFY(manager.isBusy()); // a paused run holds the queue

        RunStore store;
        QVERIFY(store.open(env.databasePath));
        QCOMPARE(store.run(session->runId())->status, RunStatus::Cancelled);
        QCOMPARE(store.responses(session->runId()).size(), 1); // the answer is kept

        QTest::mouseClick(pause, Qt::LeftButton);
        QCOMPARE(session->state(), RunSession::State::Running);
        QVERIFY(waitFinished(session));
        QCOMPARE(session->state(), RunSession::State::Finished);
        QCOMPARE(m_server->requests().size(), 2); // L1/1's stored answer was evaluated without asking again
        QCOMPARE(store.run(session->runId())->status, RunStatus::Finished);
        QCOMPARE(store.evaluations(session->runId()).size(), 2);
        QCOMPARE(page.treeModel()->taskCount(), 2);
        QCOMPARE(page.treeModel()->unitCount(), 2);
    }

    void cancelStopsAndFailedRequestsAreListed()
    {
        ScriptedLlmServer::Reply error;
        error.action = ScriptedLlmServer::Action::HttpError;
        error.status = 500;
        m_server->enqueue(error);
        ScriptedLlmServer::Reply slow = streamed(answer(QStringLiteral("late"), QStringLiteral("correct")));
        slow.delayMs = 5000;
        m_server->setDefaultReply(slow);
        RunManager manager;
        RunMonitorPage page(&manager);
        page.resize(1280, 800);
        page.show();
        RunSessionEnvironment env = environment();
        env.maxTasksInFlight = 1;
        QVERIFY(
            manager.submit(plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1"), QStringLiteral("L2/1")}), env));
        RunSession* session = manager.current();
        auto* problems = child<QTreeWidget>(page, "problemList");
        // The 500 fails L1/1's request (no retries here): a model problem and a task error.
        QTRY_VERIFY_WITH_TIMEOUT(problems->topLevelItemCount() >= 2, 20000);
        QCOMPARE(problems->topLevelItem(0)->text(2), QStringLiteral("model"));
        QVERIFY(problems->topLevelItem(0)->text(3).contains(QStringLiteral("http")));
        QCOMPARE(problems->topLevelItem(0)->text(1), QStringLiteral("L1/1"));
        const QModelIndex failed =
            page.treeModel()->indexOf(UnitKey{QStringLiteral("L1/1"), 1, 0, QStringLiteral("generator")});
        QVERIFY(failed.isValid());
        QCOMPARE(failed.siblingAtColumn(RunTreeModel::StatusColumn).data().toString(),
                 QStringLiteral("request failed"));

        // L2/1's answer takes 5 s: cancel it.
        QTRY_COMPARE_WITH_TIMEOUT(session->requestsInFlight(), 1, 20000);
        QTest::mouseClick(child<QPushButton>(page, "monitorCancel"), Qt::LeftButton);
        QVERIFY(waitFinished(session, 10000));
        QCOMPARE(session->state(), RunSession::State::Cancelled);
        QVERIFY(!manager.isBusy());
        // The unit that was generating is gone (nothing of it was stored).
        QVERIFY(
            !page.treeModel()->indexOf(UnitKey{QStringLiteral("L2/1"), 1, 0, QStringLiteral("generator")}).isValid());
        RunStore store;
        QVERIFY(store.open(env.databasePath));
        QCOMPARE(store.run(session->runId())->status, RunStatus::Cancelled);
    }

    void liveRunRowsStayInPlaceAndANewRunReplacesTheOld()
    {
        // Three samples and a second turn (the first turn does not compile) for two tasks, on a
        // page as narrow as the window at 1280×720 leaves it: rows arrive under rows already drawn.
        for (int i = 0; i < 6; ++i)
            m_server->enqueue(streamed(answer(QStringLiteral("turn-1 reply-%1 with text enough for many pieces").arg(i),
                                              QStringLiteral("compile_error")),
                                       4));
        m_server->setDefaultReply(streamed(
            answer(QStringLiteral("turn-2 reply with text enough for many pieces"), QStringLiteral("correct")), 4));
        RunManager manager;
        RunMonitorPage page(&manager);
        page.resize(900, 600);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        auto* tree = child<QTreeView>(page, "runTree");
        RunTreeModel* model = page.treeModel();
        RunSessionEnvironment env = environment();
        QVERIFY(manager.submit(
            plan(QStringLiteral("iterative"), {QStringLiteral("L1/1"), QStringLiteral("L2/1")}, 3, 2), env));
        RunSession* first = manager.current();

        // Checked whenever the model changed, from the event loop, until the run is over.
        QStringList problems;
        int checks = 0;
        bool due = false;
        const auto schedule = [&] {
            if (due)
                return;
            due = true;
            QTimer::singleShot(15, this, [&] {
                due = false;
                const QString p = viewProblems(tree, model);
                ++checks;
                if (!p.isEmpty() && problems.size() < 5)
                    problems << p;
            });
        };
        const QMetaObject::Connection c1 = connect(model, &QAbstractItemModel::rowsInserted, this, schedule);
        const QMetaObject::Connection c2 = connect(model, &QAbstractItemModel::dataChanged, this, schedule);
        const QMetaObject::Connection c3 = connect(first, &RunSession::textStreamed, this, schedule);
        QVERIFY(waitFinished(first));
        QCOMPARE(first->state(), RunSession::State::Finished);
        QTest::qWait(50);
        disconnect(c1);
        disconnect(c2);
        disconnect(c3);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        QVERIFY2(checks >= 10, qPrintable(QString::number(checks)));
        QString last = viewProblems(tree, model);
        QVERIFY2(last.isEmpty(), qPrintable(last));
        QCOMPARE(model->unitCount(), 12); // 2 tasks × 2 turns × 3 samples
        const QModelIndex turn2 = model->index(1, 0, model->indexOfTask(QStringLiteral("L1/1")));
        QCOMPARE(turn2.data().toString(), QStringLiteral("Turn 2"));
        QCOMPARE(model->rowCount(turn2), 3);
        // The unit followed last is on the page.
        QVERIFY(model->unitKey(tree->currentIndex()));
        QVERIFY(child<QLabel>(page, "unitHeader")->text().contains(QStringLiteral("turn ")));

        // A new run: the Monitor follows it, and nothing of the earlier run's sample stays.
        m_server->setDefaultReply(streamed(answer(QStringLiteral("second run"), QStringLiteral("correct")), 4));
        ScriptedLlmServer::Reply slow =
            streamed(answer(QStringLiteral("second run, slow"), QStringLiteral("correct")), 0);
        slow.delayMs = 1500;
        m_server->enqueue(slow);
        QVERIFY(manager.submit(plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1")}), environment()));
        RunSession* second = manager.current();
        QVERIFY(second != first);
        QCOMPARE(page.session(), second);
        // At once, before the new run asked anything: nothing of the sample shown before.
        QCOMPARE(child<QLabel>(page, "unitHeader")->text(),
                 QStringLiteral("Select a sample to see the model's text, its compile log and evaluation."));
        QVERIFY(child<QPlainTextEdit>(page, "modelText")->toPlainText().isEmpty());
        QVERIFY(child<QPlainTextEdit>(page, "evaluationText")->toPlainText().isEmpty());
        QCOMPARE(model->unitCount(), 0);
        // While its first answer is awaited: no row, text or header of the run before (a
        // one-turn run over L1/1 alone; the one before had two turns and L2/1).
        QTRY_VERIFY2_WITH_TIMEOUT(
            second->requestsInFlight() == 1,
            qPrintable(RunSession::stateText(second->state()) + QStringLiteral(": ") + second->errorString()), 20000);
        const QString header = child<QLabel>(page, "unitHeader")->text();
        QVERIFY2(!header.contains(QStringLiteral("turn 2")) && !header.contains(QStringLiteral("L2/1")),
                 qPrintable(header));
        QVERIFY2(!child<QPlainTextEdit>(page, "modelText")->toPlainText().contains(QStringLiteral("turn-")),
                 qPrintable(child<QPlainTextEdit>(page, "modelText")->toPlainText().left(80)));
        QVERIFY(!model->indexOfTask(QStringLiteral("L2/1")).isValid());
        QCOMPARE(model->rowCount(model->indexOfTask(QStringLiteral("L1/1"))), 1);
        QCOMPARE(model->unitCount(), 1);
        // The unit being generated is the one selected and shown.
        const std::optional<UnitKey> followed = model->unitKey(tree->currentIndex());
        QVERIFY(followed);
        QCOMPARE(followed->task, QStringLiteral("L1/1"));
        QCOMPARE(followed->turn, 1);
        QVERIFY(waitFinished(second));
        QCOMPARE(model->taskCount(), 1);
        QCOMPARE(model->unitCount(), 1);
        QVERIFY(child<QPlainTextEdit>(page, "modelText")->toPlainText().contains(QStringLiteral("second run, slow")));
        last = viewProblems(tree, model);
        QVERIFY2(last.isEmpty(), qPrintable(last));
    }

    void opensAStoredRun()
    {
        const QString db = m_dir.filePath(QStringLiteral("fixture.db"));
        kwb::test::Fixture fixture;
        {
            RunStore store;
            QVERIFY(store.open(db));
            const auto written = kwb::test::writeFixture(store);
            QVERIFY(written);
            fixture = *written;
        }
        RunMonitorPage page(nullptr);
        page.resize(1280, 800);
        page.show();
        QString error;
        QVERIFY(!page.openRun(db, 999, &error));
        QCOMPARE(error, QStringLiteral("no such run"));
        QVERIFY(page.openRun(db, fixture.agent, &error));
        QCOMPARE(page.treeModel()->taskCount(), 3);
        QCOMPARE(page.treeModel()->unitCount(), 8);
        QVERIFY(!page.treeModel()->isLive());
        QCOMPARE(page.problemCount(), 1); // the failed request
        QVERIFY(child<QTreeWidget>(page, "problemList")->topLevelItem(0)->text(3).contains(QStringLiteral("500")));
        QVERIFY(!child<QPushButton>(page, "monitorResume")->isVisibleTo(&page)); // finished
        QVERIFY(page.progressText().startsWith(QStringLiteral("3/3 tasks")));
        // Every row's item text fits its cell: none elided ("Sa…", "L1/…" read as repeated or
        // overlapping rows when the column was stretched into what the others left).
        {
            auto* tree = child<QTreeView>(page, "runTree");
            tree->expandAll();
            QTest::qWait(50);
            const QFontMetrics metrics(tree->font());
            std::function<void(const QModelIndex&)> check = [&](const QModelIndex& parent) {
                for (int r = 0; r < page.treeModel()->rowCount(parent); ++r) {
                    const QModelIndex index = page.treeModel()->index(r, RunTreeModel::ItemColumn, parent);
                    const QString text = index.data().toString();
                    QVERIFY2(metrics.horizontalAdvance(text) <= tree->visualRect(index).width(),
                             qPrintable(QStringLiteral("%1: %2 px in %3")
                                            .arg(text)
                                            .arg(metrics.horizontalAdvance(text))
                                            .arg(tree->visualRect(index).width())));
                    check(index);
                }
            };
            check(QModelIndex());
        }
        page.selectUnit(UnitKey{QStringLiteral("L2/1"), 1, 0, QStringLiteral("generator")});
        QCOMPARE(child<QPlainTextEdit>(page, "compileLog")->toPlainText(),
                 QStringLiteral("kernel.cu(3): error: fixture"));
        QCOMPARE(child<QPlainTextEdit>(page, "modelText")->toPlainText(),
                 QStringLiteral("L2/1 turn 1 generator sample 0"));
        // The prompts the sample was sent (issue 38 item 3), from the store: sample 1 of L1/1 was
        // asked after the analyzer (asked once, stored as sample 0), never sample 0's prompt.
        page.selectUnit(UnitKey{QStringLiteral("L1/1"), 1, 1, QStringLiteral("generator")});
        QString prompts = page.promptsSentText();
        QVERIFY2(prompts.contains(QStringLiteral("turn 1 · analyzer · sample 0")), qPrintable(prompts));
        QVERIFY2(prompts.contains(QStringLiteral("turn 1 · generator · sample 1 ━━\nprompt for L1/1")),
                 qPrintable(prompts));
        QVERIFY2(!prompts.contains(QStringLiteral("generator · sample 0")), qPrintable(prompts));
        // Turn 2 of L1/2: each turn's prompts, every role.
        page.selectUnit(UnitKey{QStringLiteral("L1/2"), 2, 0, QStringLiteral("generator")});
        prompts = page.promptsSentText();
        QVERIFY2(prompts.indexOf(QStringLiteral("turn 1 · generator")) <
                         prompts.indexOf(QStringLiteral("turn 2 · triager")) &&
                     prompts.indexOf(QStringLiteral("turn 2 · triager")) <
                         prompts.indexOf(QStringLiteral("turn 2 · generator")) &&
                     prompts.indexOf(QStringLiteral("turn 1 · generator")) >= 0,
                 qPrintable(prompts));
        page.selectUnit(UnitKey{QStringLiteral("L2/1"), 1, 0, QStringLiteral("generator")});

        // Another run: nothing of the sample shown before stays on the page (its header did).
        QVERIFY(child<QLabel>(page, "unitHeader")->text().contains(QStringLiteral("L2/1")));
        QVERIFY(page.followRun(db, fixture.agent)); // already shown: the selection stays
        QVERIFY(child<QLabel>(page, "unitHeader")->text().contains(QStringLiteral("L2/1")));
        QVERIFY(page.followRun(db, fixture.ablated)); // the run selected on the Results page
        QVERIFY2(!child<QLabel>(page, "unitHeader")->text().contains(QStringLiteral("L2/1")),
                 qPrintable(child<QLabel>(page, "unitHeader")->text()));
        QVERIFY(child<QPlainTextEdit>(page, "modelText")->toPlainText().isEmpty());
        QVERIFY(child<QLabel>(page, "runTitle")->text().contains(QStringLiteral("#%1").arg(fixture.ablated)));
        QVERIFY(child<QPushButton>(page, "monitorResume")->isVisibleTo(&page)); // cancelled: can resume
        QSignalSpy resume(&page, &RunMonitorPage::resumeRequested);
        QTest::mouseClick(child<QPushButton>(page, "monitorResume"), Qt::LeftButton);
        QCOMPARE(resume.size(), 1);
        QCOMPARE(resume.first().at(1).toLongLong(), fixture.ablated);
    }
};

QTEST_MAIN(TestRunMonitor)
#include "tst_runmonitor.moc"

#include "screenshottour.h"

#include "app/analysispages.h"
#include "app/chartrefresher.h"
#include "app/charts/rooflinepage.h"
#include "app/editor/prompteditorpage.h"
#include "app/mainwindow.h"
#include "app/runs/resultspage.h"
#include "app/runs/runmonitorpage.h"
#include "app/runs/runsession.h" // runmonitorpage.h holds a QPointer<RunSession>
#include "app/runs/runtreemodel.h"
#include "app/tasks/taskspage.h"
#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"
#include "core/tasks/taskcatalog.h"
#include "core/workers/jobtracker.h"

#include <QDir>
#include <QElapsedTimer>
#include <QImage>
#include <QTimer>

#include <cstdio>
#include <optional>

namespace kwb::app {

namespace {

void warn(const QString& what)
{
    std::fprintf(stderr, "kernel-workbench: screenshots: %s\n", qPrintable(what));
}

/// The window's page of that name as its class; the tour is written against the window's pages.
template <typename Page>
Page* pageOf(const MainWindow* window, const char* name)
{
    auto* page = qobject_cast<Page*>(window->page(QLatin1String(name)));
    Q_ASSERT(page);
    return page;
}

} // namespace

ScreenshotTour::ScreenshotTour(MainWindow* window, const QString& dir, int waitMs)
    : QObject(window)
    , m_window(window)
    , m_dir(dir)
    , m_waitMs(waitMs)
{}

void ScreenshotTour::start()
{
    if (!QDir().mkpath(m_dir)) {
        // From the event loop, never inside this call, like every other ending.
        QMetaObject::invokeMethod(
            this, [this] { Q_EMIT finished(false, tr("cannot create %1").arg(m_dir)); }, Qt::QueuedConnection);
        return;
    }
    TaskCatalog* catalog = m_window->catalog();
    const auto catalogDone = [catalog] {
        return catalog->state() == TaskCatalog::State::Ready || catalog->state() == TaskCatalog::State::Failed;
    };
    whenReady([this, catalogDone] { return m_window->isDeviceProbeDone() && catalogDone(); },
              [this, catalog](bool ready) {
                  if (!ready)
                      warn(tr("the worker did not finish (device %1, catalog state %2)")
                               .arg(m_window->isDeviceProbeDone())
                               .arg(int(catalog->state())));
                  if (catalog->state() == TaskCatalog::State::Failed)
                      warn(tr("no task catalog: %1").arg(catalog->errorMessage()));
                  if (m_window->database().isEmpty()) {
                      stage();
                      return;
                  }
                  const ResultsPage* results = pageOf<ResultsPage>(m_window, "results");
                  whenReady(
                      [this, results] {
                          return !m_window->jobs()->isBusy(ChartRefresher::jobSlot()) &&
                                 results->report().has_value() && !results->isBuilding();
                      },
                      [this](bool reportReady) {
                          if (!reportReady)
                              warn(tr("the results report was not ready"));
                          stage();
                      });
              });
}

void ScreenshotTour::whenReady(std::function<bool()> ready, std::function<void(bool)> then)
{
    // Polled from the window's event loop, the only one: no loop of its own to re-enter.
    auto* timer = new QTimer(this);
    timer->setInterval(50);
    QElapsedTimer clock;
    clock.start();
    connect(timer, &QTimer::timeout, this,
            [timer, clock, waitMs = m_waitMs, ready = std::move(ready), then = std::move(then)] {
                const bool done = ready();
                if (!done && clock.elapsed() <= waitMs)
                    return;
                timer->stop();
                timer->deleteLater(); // not inside its own signal
                then(done);
            });
    timer->start();
}

void ScreenshotTour::stage()
{
    MainWindow* window = m_window;
    auto* tasksPage = pageOf<TasksPage>(window, "tasks");
    auto* promptsPage = pageOf<PromptEditorPage>(window, "prompts");
    auto* monitorPage = pageOf<RunMonitorPage>(window, "monitor");
    auto* resultsPage = pageOf<ResultsPage>(window, "results");
    auto* rooflinePage = pageOf<RooflinePage>(window, "roofline");
    auto* trafficPage = pageOf<TrafficPage>(window, "traffic");
    auto* diffPage = pageOf<DiffPage>(window, "diff");
    const QString database = window->database();

    // A state worth a picture on every page.
    const QString task = QStringLiteral("L2/1");
    tasksPage->showTask(task);
    trafficPage->showTask(task);
    promptsPage->setPreviewTask(task);
    promptsPage->openTemplate(defaultPromptsDir(), QStringLiteral("agent/generator.mustache"));
    promptsPage->renderPreviewNow();
    if (!database.isEmpty()) {
        RunStore store;
        if (store.open(database)) {
            qint64 agent = 0;
            for (const RunInfo& run : store.runs())
                if (run.config.regime.fields.roles.contains(RegimeRole::Triager) && // by its roles, not its name
                    run.config.regime.fields.ablated.isEmpty()) {
                    agent = run.id;
                    break;
                }
            if (agent && !monitorPage->openRun(database, agent))
                warn(tr("cannot open run %1 in the monitor").arg(agent));
            // The Monitor with a sample of the task in view: its answer beside the tree.
            const RunTreeModel* tree = monitorPage->treeModel();
            const QModelIndex taskRow = tree->indexOfTask(task);
            std::optional<UnitKey> shown;
            for (int t = 0; t < tree->rowCount(taskRow); ++t) {
                const QModelIndex turn = tree->index(t, 0, taskRow);
                for (int u = 0; u < tree->rowCount(turn); ++u) {
                    const QModelIndex unit = tree->index(u, 0, turn);
                    if (unit.data(RunTreeModel::StatusRole).toString() == QLatin1String("correct"))
                        shown = tree->unitKey(unit); // the last correct one
                }
            }
            if (shown)
                monitorPage->selectUnit(*shown);
            else if (agent)
                warn(tr("no correct sample of %1 in run %2 for the monitor").arg(task).arg(agent));
        }
        // The diff reads the task's candidates in the background: count them once they are in.
        auto* counted = new QObject(this);
        connect(diffPage, &DiffPage::candidatesLoaded, counted, [diffPage, counted, task](const QString& loaded) {
            if (loaded != task)
                return;
            if (diffPage->candidates().size() < 2)
                warn(tr("fewer than two candidates of %1 for the diff").arg(task));
            counted->deleteLater();
        });
        if (!diffPage->showTask(task)) {
            warn(tr("no task %1 for the diff").arg(task));
            counted->deleteLater();
        }
    }

    // The welcome page, the nine pages, then the views the README shows besides: Results at
    // 1280×720, the roofline on the study's GPU from the table, the traffic of the longest chain.
    auto shots = std::make_shared<QList<Shot>>();
    shots->append({QStringLiteral("00-welcome.png"), [window] { window->showWelcome(); }, QSize()});
    const QStringList names = window->pageNames();
    for (int i = 0; i < names.size(); ++i) {
        const QString name = names.at(i);
        shots->append({QStringLiteral("%1-%2.png").arg(i + 1, 2, 10, QLatin1Char('0')).arg(name),
                       [window, name] { window->showPage(name); }, QSize()});
    }
    shots->append({QStringLiteral("05-results-1280x720.png"), [window] { window->showPage(QStringLiteral("results")); },
                   QSize(1280, 720)});
    // Each task's one best and every run's kept candidate, on the tour's level.
    shots->append({QStringLiteral("05-results-per-task.png"),
                   [window, resultsPage, database, task] {
                       if (!database.isEmpty() && !resultsPage->showTaskLevel(task.mid(1, 1).toInt()))
                           warn(tr("no level of %1 in the results' per-task table").arg(task));
                       window->showPage(QStringLiteral("results"));
                   },
                   QSize()});
    shots->append({QStringLiteral("06-roofline-v100.png"),
                   [window, rooflinePage] {
                       if (!rooflinePage->selectGpu(QStringLiteral("v100-sxm2-32gb")))
                           warn(tr("no V100 in the GPU table"));
                       window->showPage(QStringLiteral("roofline"));
                   },
                   QSize()});
    shots->append({QStringLiteral("07-traffic-L3_10.png"),
                   [window, trafficPage] {
                       trafficPage->showTask(QStringLiteral("L3/10"));
                       window->showPage(QStringLiteral("traffic"));
                   },
                   QSize()});
    grab(shots, 0);
}

void ScreenshotTour::grab(Shots shots, int index)
{
    if (index >= shots->size()) {
        std::fflush(stdout);
        Q_EMIT finished(true, QString());
        return;
    }
    const Shot& shot = shots->at(index);
    const QSize before = m_window->size();
    if (shot.windowSize.isValid())
        m_window->resize(shot.windowSize);
    shot.show();
    // Layout, chart animations off, deferred paints: the picture after 400 ms of the event loop.
    QTimer::singleShot(400, this, [this, shots, index, before] {
        const Shot& shot = shots->at(index);
        const QImage image = m_window->grab().toImage();
        const QString file = QDir(m_dir).filePath(shot.file);
        if (shot.windowSize.isValid())
            m_window->resize(before);
        if (!image.save(file)) {
            Q_EMIT finished(false, tr("cannot write %1").arg(file));
            return;
        }
        std::printf("%s\n", qPrintable(file));
        grab(shots, index + 1);
    });
}

} // namespace kwb::app

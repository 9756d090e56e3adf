#include "mainwindow.h"

#include "app/aboutdialog.h"
#include "app/analysispages.h"
#include "app/chartrefresher.h"
#include "app/charts/bestofnchart.h"
#include "app/charts/chartexport.h"
#include "app/charts/rooflinechart.h"
#include "app/charts/rooflinepage.h"
#include "app/charts/trafficchart.h"
#include "app/editor/candidatediffview.h"
#include "app/editor/prompteditorpage.h"
#include "app/editor/syntaxhighlighting.h"
#include "app/examplestudy.h"
#include "app/pagehelp.h"
#include "app/recentstores.h"
#include "app/runs/launchpage.h"
#include "app/runs/resultspage.h"
#include "app/runs/runmanager.h"
#include "app/runs/runmonitorpage.h"
#include "app/runs/runsession.h"
#include "app/screenshottour.h"
#include "app/storerefusal.h"
#include "app/tasks/taskspage.h"
#include "app/widgets/elidedlabel.h"
#include "app/widgets/windowgeometry.h"
#include "app/workbenchdata.h"
#include "core/protocol/devicefacts.h"
#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponses.h"
#include "core/store/runstore.h"
#include "core/study/provenance.h"
#include "core/tasks/gputable.h"
#include "core/tasks/taskcatalog.h"
#include "core/workers/gpulease.h"
#include "core/workers/jobtracker.h"
#include "core/workers/workerlocator.h"
#include "core/workers/workersupervisor.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QVBoxLayout>

namespace kwb::app {

namespace {

QString gpuSummary(const DeviceFacts& facts)
{
    if (!facts.available)
        return QObject::tr("no GPU (%1)").arg(facts.reason.isEmpty() ? QObject::tr("no reason given") : facts.reason);
    QString text = facts.name.isEmpty() ? QObject::tr("unnamed GPU") : facts.name;
    QStringList parts;
    if (!facts.arch.isEmpty())
        parts << facts.arch;
    if (facts.smCount > 0)
        parts << QObject::tr("%1 SMs").arg(facts.smCount);
    if (facts.memoryBytes > 0)
        parts << QObject::tr("%1 GB").arg(double(facts.memoryBytes) / 1e9, 0, 'f', 0);
    if (!parts.isEmpty())
        text += QStringLiteral(" (") + parts.join(QStringLiteral(", ")) + QLatin1Char(')');
    return text;
}

// The window's job slots: a newer job of a slot drops the older one's result.
const QString kDeviceSlot = QStringLiteral("device");
QString profileSlot(const QString& task)
{
    return QStringLiteral("profile/") + task;
}

/// CUPTI runs of a task the Traffic page measures (`profile` trials).
constexpr int kTrafficProfileTrials = 5;

} // namespace

MainWindow::MainWindow(const QString& workerPath, QWidget* parent)
    : QMainWindow(parent)
{
    setWindowTitle(tr("Kernel Workbench"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/kernel-workbench.svg")));
    resize(1400, 880);

    m_jobs = new JobTracker(this);
    m_catalog = new TaskCatalog(this);
    m_runs = new RunManager(this);

    // Elided, whole in their tooltips: a long file name or worker path never widens the window.
    m_workerLabel = new ElidedLabel(this);
    m_deviceLabel = new ElidedLabel(this);
    m_databaseLabel = new ElidedLabel(tr("No run database"), this);
    statusBar()->addWidget(m_workerLabel, 1);
    statusBar()->addPermanentWidget(m_databaseLabel);
    statusBar()->addPermanentWidget(m_deviceLabel);

    buildPages();
    m_charts = new ChartRefresher(m_jobs, {m_catalog, m_tasksPage, m_promptsPage, m_rooflinePage, m_trafficPage}, this);
    connect(m_charts, &ChartRefresher::updated, this, &MainWindow::chartDataUpdated);
    setupMenus();
    startWorker(workerPath);
    restoreSettings();
}

MainWindow::~MainWindow()
{
    // First, while every page still stands: pending results are dropped and a store scan still
    // running is waited for (it only reads), so nothing is delivered into a half-destroyed window.
    delete m_jobs;
    m_jobs = nullptr;
}

QString MainWindow::workerStatus() const
{
    return m_workerLabel->text();
}

QString MainWindow::deviceStatus() const
{
    return m_deviceLabel->text();
}

void MainWindow::addPage(const QString& name, const QString& title, const QString& icon, QWidget* page)
{
    auto* item = new QListWidgetItem(QIcon::fromTheme(icon), title, m_sidebar);
    item->setData(Qt::UserRole, name);
    item->setToolTip(tr("%1 (Ctrl+%2)").arg(title).arg(m_pageNames.size() + 1));
    page->setObjectName(name);
    m_stack->addWidget(page);
    m_pageNames << name;
}

void MainWindow::buildPages()
{
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_sidebar = new QListWidget(central);
    m_sidebar->setFrameShape(QFrame::NoFrame);
    m_sidebar->setUniformItemSizes(true);
    m_sidebar->setFixedWidth(150);
    m_sidebar->setSpacing(2);
    // Over every page: where the open study's answers came from when no live model wrote them
    // (core/study/provenance.h), so no chart reads as a finding about a language model.
    auto* right = new QWidget(central);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->setSpacing(0);
    m_provenanceBanner = new QLabel(right);
    m_provenanceBanner->setObjectName(QStringLiteral("provenanceBanner"));
    m_provenanceBanner->setWordWrap(true); // wraps, never widens the window
    m_provenanceBanner->setMinimumWidth(1);
    m_provenanceBanner->setContentsMargins(8, 4, 8, 4);
    m_provenanceBanner->setStyleSheet(
        QStringLiteral("background: #fff3cd; color: #5c4400; border-bottom: 1px solid #e0c26a;"));
    m_provenanceBanner->hide();
    m_stack = new QStackedWidget(right);
    rightLayout->addWidget(m_provenanceBanner);
    rightLayout->addWidget(m_stack, 1);
    layout->addWidget(m_sidebar);
    layout->addWidget(right, 1);
    setCentralWidget(central);

    m_tasksPage = new TasksPage(m_catalog, m_stack);
    m_tasksPage->setHighlighterFactory(
        [](QTextDocument* document) { return createHighlighter(document, Language::Python); });
    m_promptsPage = new PromptEditorPage(defaultPromptsDir(), TemplateSet::userSetsRoot(), m_stack);
    m_launchPage = new LaunchPage(m_runs, m_stack);
    m_launchPage->setPromptsDir(defaultPromptsDir());
    m_monitorPage = new RunMonitorPage(m_runs, m_stack);
    m_resultsPage = new ResultsPage(m_stack);
    m_rooflinePage = new RooflinePage(m_stack);
    m_trafficPage = new TrafficPage(m_catalog, m_stack);
    m_bestOfNPage = new BestOfNPage(m_stack);
    m_diffPage = new DiffPage(m_stack);

    addPage(QStringLiteral("tasks"), tr("Tasks"), QStringLiteral("view-list-details"), m_tasksPage);
    addPage(QStringLiteral("prompts"), tr("Prompts"), QStringLiteral("document-edit"), m_promptsPage);
    addPage(QStringLiteral("launch"), tr("Launch"), QStringLiteral("media-playback-start"), m_launchPage);
    addPage(QStringLiteral("monitor"), tr("Monitor"), QStringLiteral("utilities-system-monitor"), m_monitorPage);
    addPage(QStringLiteral("results"), tr("Results"), QStringLiteral("x-office-spreadsheet"), m_resultsPage);
    addPage(QStringLiteral("roofline"), tr("Roofline"), QStringLiteral("office-chart-line"), m_rooflinePage);
    addPage(QStringLiteral("traffic"), tr("HBM traffic"), QStringLiteral("office-chart-bar"), m_trafficPage);
    addPage(QStringLiteral("bestofn"), tr("Best-of-n"), QStringLiteral("office-chart-area"), m_bestOfNPage);
    addPage(QStringLiteral("diff"), tr("Diff"), QStringLiteral("document-compare"), m_diffPage);
    connect(m_sidebar, &QListWidget::currentRowChanged, m_stack, [this](int row) {
        if (row >= 0)
            m_stack->setCurrentIndex(row);
    });
    m_welcome = buildWelcome();
    m_stack->addWidget(m_welcome); // not in the sidebar: pageNames() stay the nine pages
    m_sidebar->setCurrentRow(0);

    // Pages that point at each other.
    const auto openTask = [this](const QString& id) {
        m_tasksPage->showTask(id);
        showPage(QStringLiteral("tasks"));
    };
    connect(m_rooflinePage, &RooflinePage::taskActivated, this, openTask);
    connect(m_tasksPage, &TasksPage::currentTaskChanged, this, [this](const QString& id) {
        m_trafficPage->showTask(id);
        m_promptsPage->setPreviewTask(id);
    });
    connect(m_resultsPage, &ResultsPage::runActivated, this, [this](const QString& db, qint64 run) {
        QString error;
        if (m_monitorPage->openRun(db, run, &error))
            showPage(QStringLiteral("monitor"));
        else
            statusBar()->showMessage(error, 8000);
    });
    connect(m_monitorPage, &RunMonitorPage::resumeRequested, this, [this](const QString& db, qint64 run) {
        QString error;
        if (!m_launchPage->resumeRun(db, run, &error))
            QMessageBox::warning(this, tr("Resume run"), error);
    });
    connect(m_launchPage, &LaunchPage::runSubmitted, this, [this](bool startedNow) {
        if (startedNow)
            showPage(QStringLiteral("monitor"));
    });
    connect(m_runs, &RunManager::sessionStarted, this, [this](RunSession* session) {
        connect(session, &RunSession::runReady, this,
                [this, session] { showLaunchedRun(session->environment().databasePath, session->label()); });
    });
    connect(m_runs, &RunManager::sessionFinished, this, [this](RunSession* session) {
        showLaunchedRun(session->environment().databasePath, session->label());
        m_charts->refresh(m_database);
    });
    connect(m_resultsPage, &ResultsPage::openRequested, this,
            [this](const QString& path) { openDatabaseOrExplain(path); });
    // The monitor shows the run selected on the Results page (the live session when it is that run).
    connect(m_resultsPage, &ResultsPage::runSelected, this, [this](const QString& db, qint64 run) {
        QString error;
        if (!m_monitorPage->followRun(db, run, &error))
            statusBar()->showMessage(error, 8000);
    });
    connect(m_resultsPage, &ResultsPage::reportReady, this, [this] {
        if (m_resultsPage->report())
            m_bestOfNPage->setCurves(bestOfNSeries(*m_resultsPage->report()));
    });
    connect(m_catalog, &TaskCatalog::stateChanged, this, &MainWindow::onCatalogState);
    connect(m_trafficPage, &TrafficPage::measureRequested, this, &MainWindow::measureTraffic);
    connect(m_catalog, &TaskCatalog::taskUpdated, this, [this](const QString& id) {
        const TaskInfo* t = m_catalog->task(id);
        if (t && t->hasAnalysis())
            m_promptsPage->setTaskData(*t, t->analysisJson);
    });
}

QWidget* MainWindow::buildWelcome()
{
    auto* page = new QWidget(m_stack);
    page->setObjectName(QStringLiteral("welcome"));
    auto* outer = new QVBoxLayout(page);
    outer->addStretch(1);
    auto* title = new QLabel(tr("<h2>Kernel Workbench</h2>"
                                "<p>Study how language models write CUDA kernels for KernelBench tasks: prompts, "
                                "regimes, evaluation on the GPU, and the study's tables and charts.</p>"
                                "<p>Start with one of these:</p>"),
                             page);
    title->setWordWrap(true);
    title->setAlignment(Qt::AlignCenter);
    outer->addWidget(title);
    const auto button = [&](const QString& name, const QString& text, const QString& tip) {
        auto* b = new QPushButton(text, page);
        b->setObjectName(name);
        b->setToolTip(tip);
        b->setMinimumWidth(420);
        auto* row = new QHBoxLayout;
        row->addStretch(1);
        row->addWidget(b);
        row->addStretch(1);
        outer->addLayout(row);
        return b;
    };
    QPushButton* example =
        button(QStringLiteral("welcomeExample"),
               tr("Open the example study (a fixture server, not a model; NVIDIA H200, 10 runs × 30 tasks)"),
               tr("The study re-run on an H200 with a fixture model server: every regime and ablation, ready for the "
                  "Results, Roofline, Best-of-n and Diff pages. Timed on 2026-11-30, before the worker timed ahead of "
                  "its CUPTI trace: launch-bound level-3 speed-ups there carry the tracer's cost (up to 13 %). "
                  "Unpacked once into %1.")
                   .arg(QDir::toNativeSeparators(exampleStudyDatabase())));
    example->setEnabled(!exampleStudyArchive().isEmpty());
    // Real model text (issue 38): what a model's answers do in every stage, labelled as replayed.
    QPushButton* recorded = button(
        QStringLiteral("welcomeRecordedExample"),
        tr("Open real model answers (Qwen3-Coder-480B, 5 regimes × 30 tasks)"),
        tr("Qwen3-Coder-480B's answers to KernelBench's own prompt (technoabsurdist/KernelBench, MIT), replayed by "
           "a recorded server to five regimes in KernelBench's format and evaluated on an H100 (zero-shot) and an "
           "H200 (the other four), 2026-12-05. Every sample and turn of a task got the same recorded answer, so "
           "the regimes tie: the runs show what real answers do (compile errors, wrong shapes, correct but slower "
           "than PyTorch), not which loop is better. Unpacked once into %1.")
            .arg(QDir::toNativeSeparators(exampleStudyDatabase(ExampleStudy::RecordedAnswers))));
    recorded->setEnabled(!exampleStudyArchive(ExampleStudy::RecordedAnswers).isEmpty());
    QPushButton* open =
        button(QStringLiteral("welcomeOpen"), tr("Open a run database…"), tr("A file `kwb run` or Launch wrote"));
    QPushButton* launch = button(QStringLiteral("welcomeLaunch"), tr("Launch a run…"),
                                 tr("Pick tasks, a regime and a model server on the Launch page"));
    QPushButton* tasks = button(QStringLiteral("welcomeTasks"), tr("Browse the tasks"),
                                tr("The KernelBench tasks, their shapes and roofline bounds"));
    m_welcomeStatus = new QLabel(page);
    m_welcomeStatus->setObjectName(QStringLiteral("welcomeStatus"));
    m_welcomeStatus->setAlignment(Qt::AlignCenter);
    m_welcomeStatus->setWordWrap(true);
    outer->addWidget(m_welcomeStatus);
    outer->addStretch(2);
    const auto openOnClick = [this](QPushButton* b, ExampleStudy which) {
        connect(b, &QPushButton::clicked, this, [this, which] {
            QString error;
            if (!openExampleStudy(which, &error))
                m_welcomeStatus->setText(error);
        });
    };
    openOnClick(example, ExampleStudy::FixtureServer);
    openOnClick(recorded, ExampleStudy::RecordedAnswers);
    connect(open, &QPushButton::clicked, this, &MainWindow::chooseDatabase);
    connect(launch, &QPushButton::clicked, this, [this] { showPage(QStringLiteral("launch")); });
    connect(tasks, &QPushButton::clicked, this, [this] { showPage(QStringLiteral("tasks")); });
    return page;
}

void MainWindow::showWelcome()
{
    const QSignalBlocker block(m_sidebar);
    m_sidebar->setCurrentRow(-1);
    m_stack->setCurrentWidget(m_welcome);
}

bool MainWindow::isWelcomeShown() const
{
    return m_stack->currentWidget() == m_welcome;
}

bool MainWindow::openExampleStudy(ExampleStudy which, QString* error)
{
    const QString target = exampleStudyDatabase(which);
    if (QFileInfo(target).isFile()) {
        const bool ok = openDatabase(target, error);
        if (ok)
            showPage(QStringLiteral("results"));
        return ok;
    }
    // Unpacked in the background (examplestudy.h), then opened.
    auto* unpacker = new ExampleStudyUnpacker(which, this);
    if (!unpacker->start(error)) {
        delete unpacker;
        return false;
    }
    m_welcomeStatus->setText(tr("Unpacking the example study into %1 …").arg(QDir::toNativeSeparators(target)));
    connect(unpacker, &ExampleStudyUnpacker::unpacked, this, [this, unpacker](const QString& database) {
        unpacker->deleteLater();
        m_welcomeStatus->clear();
        QString why;
        if (openDatabase(database, &why))
            showPage(QStringLiteral("results"));
        else
            m_welcomeStatus->setText(tr("Cannot open the example study: %1").arg(why));
    });
    connect(unpacker, &ExampleStudyUnpacker::failed, this, [this, unpacker](const QString& message) {
        unpacker->deleteLater();
        m_welcomeStatus->setText(message);
    });
    return true;
}

void MainWindow::setupMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(QIcon::fromTheme(QStringLiteral("document-open")), tr("&Open Run Database…"));
    open->setShortcut(QKeySequence::Open);
    connect(open, &QAction::triggered, this, &MainWindow::chooseDatabase);
    QAction* create = file->addAction(QIcon::fromTheme(QStringLiteral("document-new")), tr("&New Run Database…"));
    create->setShortcut(QKeySequence::New);
    create->setToolTip(tr("Make a new, empty run store in a file of your choice"));
    connect(create, &QAction::triggered, this, [this] { chooseNewDatabase(); });
    m_recent = new RecentStores(file->addMenu(tr("Open &Recent")), this);
    connect(m_recent, &RecentStores::openRequested, this, [this](const QString& path) { openDatabaseOrExplain(path); });
    file->addSeparator();
    QAction* exportChart = file->addAction(QIcon::fromTheme(QStringLiteral("document-export")), tr("&Export Chart…"));
    exportChart->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    exportChart->setToolTip(tr("Write the current page's chart as PNG or SVG"));
    connect(exportChart, &QAction::triggered, this, &MainWindow::exportCurrentChart);
    QAction* refresh = file->addAction(QIcon::fromTheme(QStringLiteral("view-refresh")), tr("Re&load Database"));
    refresh->setShortcut(QKeySequence::Refresh);
    connect(refresh, &QAction::triggered, this, [this] {
        if (!m_database.isEmpty())
            openDatabase(m_database);
    });
    file->addSeparator();
    QAction* quit = file->addAction(QIcon::fromTheme(QStringLiteral("application-exit")), tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_pageNames.size(); ++i) {
        QAction* a = view->addAction(m_sidebar->item(i)->icon(), m_sidebar->item(i)->text());
        if (i < 9)
            a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
        connect(a, &QAction::triggered, this, [this, i] { m_sidebar->setCurrentRow(i); });
    }

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* pageHelp = help->addAction(QIcon::fromTheme(QStringLiteral("help-contents")), tr("Help for This &Page"));
    pageHelp->setObjectName(QStringLiteral("pageHelpAction"));
    pageHelp->setShortcut(QKeySequence::HelpContents); // F1
    pageHelp->setShortcutContext(Qt::ApplicationShortcut);
    connect(pageHelp, &QAction::triggered, this, &MainWindow::showPageHelp);
    QAction* welcome = help->addAction(QIcon::fromTheme(QStringLiteral("go-home")), tr("&Welcome"));
    welcome->setObjectName(QStringLiteral("welcomeAction"));
    welcome->setToolTip(tr("The welcome page: the example study, a database, a run or the tasks"));
    connect(welcome, &QAction::triggered, this, &MainWindow::showWelcome);
    help->addSeparator();
    QAction* about = help->addAction(tr("&About Kernel Workbench"));
    about->setMenuRole(QAction::AboutRole);
    connect(about, &QAction::triggered, this, &MainWindow::showAbout);
    QAction* aboutQt = help->addAction(tr("About &Qt"));
    aboutQt->setMenuRole(QAction::AboutQtRole);
    connect(aboutQt, &QAction::triggered, qApp, &QApplication::aboutQt);
}

void MainWindow::startWorker(const QString& workerPath)
{
    const WorkerLocator::Result found = WorkerLocator::locate(workerPath);
    if (!found.found()) {
        setWorkerStatus(tr("Worker: not found"), found.error);
        m_trafficPage->setMeasureAvailable(false, tr("no worker found"));
        setDeviceStatus(tr("GPU: unknown"));
        m_charts->useTableGpuForTasks();
        m_catalog->setUnavailable(found.error);
        m_deviceDone = true;
        // Emitted later, so a caller that connects after construction still sees it.
        QMetaObject::invokeMethod(this, &MainWindow::deviceProbeFinished, Qt::QueuedConnection);
        return;
    }
    m_workerProgram = found.program;
    RunSessionEnvironment env;
    env.workerProgram = found.program;
    m_runs->setDefaultEnvironment(env);
    setWorkerStatus(tr("Worker: starting %1 …").arg(QFileInfo(found.program).fileName()), found.program);
    setDeviceStatus(tr("GPU: asking the worker …"));

    m_supervisor = new WorkerSupervisor(this);
    m_supervisor->setProgram(found.program);
    m_supervisor->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
    // Loading libtorch and creating a CUDA context take seconds on a cold machine.
    m_supervisor->setDefaultTimeout(60 * 1000);

    connect(m_supervisor, &WorkerSupervisor::workerAvailable, this, [this, found](qint64 pid, const HelloInfo& hello) {
        m_hello = hello; // for About
        m_launchPage->setWorkerProfiles(hello);
        QString text =
            tr("Worker: %1 %2 (protocol %3)")
                .arg(QFileInfo(found.program).fileName(), hello.worker, QString::number(hello.protocol.value_or(0)));
        if (!hello.torch.isEmpty())
            text += tr(", torch %1").arg(hello.torch);
        setWorkerStatus(text, tr("%1 (found %2), pid %3").arg(found.program, found.origin).arg(pid));
    });
    // The measured ceilings run small kernels for a few seconds: wanted for the roofline. They take
    // the GPU's lease (core/workers/gpulease.h), so they never overlap a run's timings.
    GpuLeases::instance()->whenHeld(0, QStringLiteral("window: device ceilings"), this, [this, found](qint64 lease) {
        m_jobs->request(kDeviceSlot, m_supervisor, WorkerRequests::device(true), -1,
                        [this, found, held = GpuLeases::guard(lease)](const WorkerReply& reply) {
                            const WorkerResponse& response = reply.response;
                            if (!reply.answered()) {
                                setWorkerStatus(tr("Worker: %1").arg(reply.status),
                                                found.program + QStringLiteral(": ") + reply.message);
                                setDeviceStatus(tr("GPU: unknown"), reply.message);
                                m_charts->useTableGpuForTasks();
                            } else if (response.ok() && response.device) {
                                setDeviceStatus(tr("GPU: %1").arg(gpuSummary(*response.device)));
                                onDevice(*response.device);
                            } else {
                                setDeviceStatus(tr("GPU: unknown"), response.header.errorMessage);
                                m_charts->useTableGpuForTasks();
                            }
                            m_deviceDone = true;
                            Q_EMIT deviceProbeFinished();
                        });
    });
    // The catalog's tasks and analyze requests queue behind it on the same worker.
    m_catalog->setSupervisor(m_supervisor);
    m_catalog->load();
}

void MainWindow::measureTraffic(const QString& task)
{
    if (!m_supervisor || !m_charts->liveDevice().available) {
        m_trafficPage->setProfileFailed(task, tr("no GPU on this machine"));
        return;
    }
    // A slot per task: measuring one task again supersedes its last measurement, not another task's.
    // The measurement takes the GPU's lease, so it never overlaps a run's timings.
    GpuLeases::instance()->whenHeld(
        0, QStringLiteral("window: traffic of %1").arg(task), this, [this, task](qint64 lease) {
            m_jobs->request(profileSlot(task), m_supervisor,
                            WorkerRequests::profile(task, QStringLiteral("full"), kTrafficProfileTrials), 120 * 1000,
                            [this, task, held = GpuLeases::guard(lease)](const WorkerReply& reply) {
                                const WorkerResponse& response = reply.response;
                                if (!reply.answered()) {
                                    m_trafficPage->setProfileFailed(task, reply.status + QStringLiteral(": ") +
                                                                              reply.message);
                                    return;
                                }
                                if (!response.ok() || !response.profile) {
                                    m_trafficPage->setProfileFailed(task, response.header.errorMessage);
                                    return;
                                }
                                const GpuRoofs roofs = fromDeviceFacts(m_charts->liveDevice());
                                const Roof* memory = roofs.primaryMemory();
                                m_trafficPage->setProfile(task, *response.profile, roofs.bandwidthGBps(),
                                                          memory && memory->origin == Roof::Origin::Measured
                                                              ? tr("measured copy bandwidth")
                                                              : tr("theoretical bandwidth"));
                            });
        });
}

void MainWindow::onDevice(const DeviceFacts& facts)
{
    m_trafficPage->setMeasureAvailable(facts.available, facts.reason);
    m_charts->setLiveDevice(facts);
}

void MainWindow::onCatalogState()
{
    const TaskCatalog::State state = m_catalog->state();
    if (state == TaskCatalog::State::Ready || state == TaskCatalog::State::Failed) {
        // An idle worker holds libtorch (and, after the probe, a CUDA context) for nothing.
        if (m_supervisor && m_deviceDone)
            m_supervisor->stopWorker();
    }
    if (state != TaskCatalog::State::Ready)
        return;
    QList<QPair<QString, QString>> tasks;
    for (const TaskInfo& t : m_catalog->tasks())
        tasks.append({t.id, t.title});
    m_launchPage->setTaskCatalog(tasks);
    m_diffPage->setTasks(tasks);
    m_charts->refresh(m_database);
}

bool MainWindow::openDatabase(const QString& path, QString* error)
{
    // Tried first on a store of its own, so a file that cannot be opened leaves the open one alone.
    // It stays open while the pages open theirs, so an older read-only store is copied and
    // migrated once (RunStore's migrated copy lives while a store reads it).
    RunStore probe;
    QString why;
    if (!QFileInfo::exists(path))
        why = tr("no such file");
    else if (!probe.open(path))
        why = probe.errorString();
    if (!why.isEmpty() || !m_resultsPage->setDatabase(path, &why) || !m_diffPage->setDatabase(path, &why)) {
        if (error)
            *error = why;
        statusBar()->showMessage(why.startsWith(path) ? why : tr("Cannot open %1: %2").arg(path, why), 15000);
        return false;
    }
    m_database = QFileInfo(path).absoluteFilePath();
    m_databaseReadOnly = probe.isReadOnly();
    const QString standIn = standInAnswersNote(probe.runs());
    m_provenanceBanner->setText(standIn);
    m_provenanceBanner->setToolTip(standIn);
    m_provenanceBanner->setVisible(!standIn.isEmpty());
    m_promptsPage->setRuns(probe.runs()); // its "Compare with run"
    // The launch database stays what it was: runs tried from Launch never land in a study file
    // because it was opened (runlaunch.h's defaultLaunchDatabase), nor in a read-only one.
    m_databaseLabel->setText(databaseStatus());
    const QString note = probe.openNote();
    m_databaseLabel->setToolTip(databaseStatusTip() + (note.isEmpty() ? QString() : QStringLiteral("\n") + note));
    setWindowTitle(m_databaseReadOnly ? tr("%1 (read-only) — Kernel Workbench").arg(QFileInfo(path).fileName())
                                      : tr("%1 — Kernel Workbench").arg(QFileInfo(path).fileName()));
    if (!note.isEmpty())
        statusBar()->showMessage(note, 15000); // a migration, a read-only open: said once
    m_recent->add(m_database);
    m_charts->refresh(m_database);
    return true;
}

QString MainWindow::provenanceBanner() const
{
    return m_provenanceBanner->isHidden() ? QString() : m_provenanceBanner->text();
}

QString MainWindow::databaseStatus() const
{
    if (m_database.isEmpty())
        return tr("No run database");
    const QString name = QFileInfo(m_database).fileName();
    return m_databaseReadOnly ? tr("Runs: %1 (read-only)").arg(name) : tr("Runs: %1").arg(name);
}

QString MainWindow::databaseStatusTip() const
{
    if (m_database.isEmpty())
        return QString();
    if (!m_databaseReadOnly)
        return m_database;
    return tr("%1\nRead-only: nothing is written to it. Runs you launch are written to the Launch page's database.")
        .arg(m_database);
}

QMessageBox* MainWindow::openDatabaseOrExplain(const QString& path)
{
    QString error;
    if (openDatabase(path, &error))
        return nullptr;
    return showStoreRefusal(
        this, path, RunStore::inspect(path), error,
        [this, path] {
            QString why;
            if (!createDatabase(path, &why))
                QMessageBox::warning(this, tr("Make It a Run Store"), why);
        },
        [this](const QString& folder) { chooseNewDatabase(folder); });
}

bool MainWindow::createDatabase(const QString& path, QString* error)
{
    {
        // Write access: a new file, an empty one (asked for here), or a run store that may be written.
        RunStore store;
        if (!store.open(path, OpenOptions{OpenOptions::Access::Write, true})) {
            if (error)
                *error = store.errorString();
            statusBar()->showMessage(store.errorString(), 15000);
            return false;
        }
    }
    return openDatabase(path, error);
}

void MainWindow::chooseNewDatabase(const QString& folder)
{
    const QString start =
        folder.isEmpty() ? (m_database.isEmpty() ? QDir::homePath() : QFileInfo(m_database).absolutePath()) : folder;
    // No "replace?": an existing file is never replaced; createDatabase says what it is instead.
    const QString path = QFileDialog::getSaveFileName(
        this, tr("New Run Database"), QDir(start).filePath(QStringLiteral("runs.db")),
        tr("Run databases (*.db *.sqlite *.sqlite3);;All files (*)"), nullptr, QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty())
        return;
    QString error;
    if (!createDatabase(path, &error))
        QMessageBox::warning(this, tr("New Run Database"), error);
}

void MainWindow::showLaunchedRun(const QString& database, const QString& runLabel)
{
    if (database.isEmpty())
        return;
    if (m_database.isEmpty()) {
        // Nothing open yet: the launched run's database is the one to look at.
        if (QFileInfo(database).isFile())
            openDatabase(database);
        return;
    }
    if (QFileInfo(database).absoluteFilePath() == m_database)
        m_resultsPage->refresh();
    else
        m_resultsPage->offerDatabase(database, runLabel);
}

void MainWindow::chooseDatabase()
{
    const QString start = m_database.isEmpty() ? QDir::homePath() : QFileInfo(m_database).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Run Database"), start,
                                                      tr("Run databases (*.db *.sqlite *.sqlite3);;All files (*)"));
    if (path.isEmpty())
        return;
    openDatabaseOrExplain(path);
}

QWidget* MainWindow::currentChartWidget() const
{
    const QString page = currentPage();
    if (page == QLatin1String("roofline"))
        return m_rooflinePage->chart();
    if (page == QLatin1String("traffic"))
        return m_trafficPage->chart();
    if (page == QLatin1String("bestofn"))
        return m_bestOfNPage->chart();
    return nullptr;
}

void MainWindow::exportCurrentChart()
{
    QWidget* chart = currentChartWidget();
    if (!chart) {
        statusBar()->showMessage(tr("This page has no chart: the roofline, HBM traffic and best-of-n pages do."), 6000);
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Chart"),
                                                      QDir::home().filePath(currentPage() + QStringLiteral(".svg")),
                                                      tr("SVG (*.svg);;PNG (*.png)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!exportChart(chart, path, &error))
        QMessageBox::warning(this, tr("Export Chart"), error);
    else
        statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

QStringList MainWindow::pageNames() const
{
    return m_pageNames;
}

QWidget* MainWindow::page(const QString& name) const
{
    const int i = int(m_pageNames.indexOf(name));
    return i >= 0 ? m_stack->widget(i) : nullptr;
}

void MainWindow::showPage(const QString& name)
{
    if (name == QLatin1String("welcome")) {
        showWelcome();
        return;
    }
    const int i = int(m_pageNames.indexOf(name));
    if (i >= 0)
        m_sidebar->setCurrentRow(i);
}

QString MainWindow::currentPage() const
{
    if (isWelcomeShown())
        return QStringLiteral("welcome");
    return m_pageNames.value(m_stack->currentIndex());
}

void MainWindow::writeScreenshots(const QString& dir, int waitMs)
{
    auto* tour = new ScreenshotTour(this, dir, waitMs);
    connect(tour, &ScreenshotTour::finished, this, [this, tour](bool ok, const QString& error) {
        tour->deleteLater();
        Q_EMIT screenshotsFinished(ok, error);
    });
    tour->start();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (m_promptsPage->isModified()) {
        const auto answer = QMessageBox::question(
            this, tr("Unsaved template"),
            tr("The template %1 has unsaved changes. Save them before closing?").arg(m_promptsPage->currentTemplate()),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
        if (answer == QMessageBox::Cancel || (answer == QMessageBox::Save && !m_promptsPage->save())) {
            event->ignore();
            return;
        }
    }
    QSettings settings;
    // Never a size larger than the screen: a window widened past it once reopened that wide.
    keepOnScreen(this);
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/page"), currentPage());
    if (!m_database.isEmpty())
        settings.setValue(QStringLiteral("lastDatabase"), m_database);
    event->accept();
}

void MainWindow::restoreSettings()
{
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    keepOnScreen(this); // saved on another screen, or before sizes were kept to it
    // First start (no page and no database remembered): the welcome page, with the example study.
    if (!settings.contains(QStringLiteral("window/page")) && !settings.contains(QStringLiteral("lastDatabase")) &&
        RecentStores::paths().isEmpty())
        showWelcome();
    else
        showPage(settings.value(QStringLiteral("window/page"), QStringLiteral("tasks")).toString());
}

void MainWindow::setWorkerStatus(const QString& text, const QString& tooltip)
{
    m_workerLabel->setText(text);
    m_workerLabel->setToolTip(tooltip);
    qInfo().noquote() << text << (tooltip.isEmpty() ? QString() : QStringLiteral(" [") + tooltip + QLatin1Char(']'));
}

void MainWindow::setDeviceStatus(const QString& text, const QString& tooltip)
{
    m_deviceLabel->setText(text);
    m_deviceLabel->setToolTip(tooltip);
    qInfo().noquote() << text << (tooltip.isEmpty() ? QString() : QStringLiteral(" [") + tooltip + QLatin1Char(']'));
}

QDialog* MainWindow::showAbout()
{
    // The device answer where one came (a GPU, or the worker's reason for none).
    const DeviceFacts& device = m_charts->liveDevice();
    const bool answered = device.available || !device.reason.isEmpty();
    auto* dialog =
        new AboutDialog(m_hello, answered ? std::optional<DeviceFacts>(device) : std::nullopt, m_workerProgram, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
    return dialog;
}

QMessageBox* MainWindow::showPageHelp()
{
    const QString page = currentPage();
    const int row = int(m_pageNames.indexOf(page));
    const QString title = row >= 0 ? m_sidebar->item(row)->text() : tr("Welcome");
    auto* box =
        new QMessageBox(QMessageBox::NoIcon, tr("Help: %1").arg(title), pageHelpText(page), QMessageBox::Close, this);
    box->setObjectName(QStringLiteral("pageHelp"));
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
    return box;
}

} // namespace kwb::app

#include "app/runs/resultspage.h"

#include "app/runs/reporttables.h"
#include "app/runs/runlistmodel.h"
#include "app/widgets/elidedlabel.h"
#include "core/store/runstore.h"
#include "core/study/evaluationsummary.h"
#include "core/study/reportformat.h"
#include "core/workers/jobtracker.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace kwb::app {

namespace {

QTableView* makeTable(QStandardItemModel* model, const QString& name, QWidget* parent)
{
    auto* view = new QTableView(parent);
    view->setObjectName(name);
    view->setModel(model);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setAlternatingRowColors(true);
    view->setWordWrap(false);
    view->verticalHeader()->hide();
    // One line of text a row (the style's default is about two): more of Table II at 1280×720.
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 8);
    view->horizontalHeader()->setStretchLastSection(false);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    return view;
}

QLabel* noteLabel(const QString& text, QWidget* parent)
{
    auto* label = new QLabel(text, parent);
    label->setWordWrap(true);
    label->setStyleSheet(QStringLiteral("color: palette(dark);"));
    return label;
}

struct ReportResult
{
    std::optional<Report> report;
    QString error;
    QStringList notCounted; ///< "#4 agent, L1/1 turn 1 sample 0: not counted: measured …"
};

/// The evaluations of the runs that say correct but do not count (core's countsAsCorrect), each
/// with its reason (evaluationsummary.h), so the page says why a correct-looking kernel is missing.
QStringList notCountedEvaluations(const RunStore& store, const Report& report)
{
    QStringList lines;
    for (const RunReport& run : report.runs)
        for (const EvaluationRecord& e : store.evaluations(run.run.id)) {
            if (!e.result.value(QLatin1String("flags")).toArray().contains(QStringLiteral("below_roofline_floor")))
                continue; // the cheap test first: most evaluations carry no flag
            for (const QString& reason : notCountedReasons(e.evaluation()))
                lines << QStringLiteral("%1, %2 turn %3 sample %4: %5")
                             .arg(run.label(), e.task)
                             .arg(e.turn)
                             .arg(e.sample)
                             .arg(reason);
        }
    return lines;
}

const QString kReportSlot = QStringLiteral("report");
const QString kRunsSlot = QStringLiteral("runs");

} // namespace

ResultsPage::ResultsPage(QWidget* parent)
    : QWidget(parent)
    , m_runs(new RunListModel(this))
    , m_jobs(new JobTracker(this))
{
    buildUi();
    connect(m_runs, &RunListModel::checkedRunsChanged, this, &ResultsPage::scheduleReport);
    showEmptyState(tr("No run database open: File > Open run database…"));
    updateActions();
}

ResultsPage::~ResultsPage()
{
    // A report being built reads the database for a moment: the tracker drops its result and
    // lets it end rather than kill it mid-query, before the page's widgets go.
    delete m_jobs;
    m_jobs = nullptr;
}

bool ResultsPage::isBuilding() const
{
    return m_jobs && (m_jobs->isBusy(kReportSlot) || m_jobs->isBusy(kRunsSlot));
}

void ResultsPage::buildUi()
{
    auto* layout = new QVBoxLayout(this);

    auto* top = new QHBoxLayout;
    // The path elided in its middle (the file name stays), whole in the tooltip: a bold 73-character
    // path pushed the export buttons off a 1280×720 window (issue 38).
    auto* databaseLabel = new ElidedLabel(this);
    databaseLabel->setElideMode(Qt::ElideMiddle);
    m_databaseLabel = databaseLabel;
    m_databaseLabel->setObjectName(QStringLiteral("databaseLabel"));
    auto* open = new QPushButton(tr("Open database…"), this);
    open->setObjectName(QStringLiteral("openDatabase"));
    auto* refreshButton = new QPushButton(tr("Refresh"), this);
    refreshButton->setObjectName(QStringLiteral("refresh"));
    m_exportCsv = new QPushButton(tr("Export CSV…"), this);
    m_exportCsv->setObjectName(QStringLiteral("exportCsv"));
    m_exportJson = new QPushButton(tr("Export JSON…"), this);
    m_exportJson->setObjectName(QStringLiteral("exportJson"));
    m_exportMarkdown = new QPushButton(tr("Export Markdown…"), this);
    m_exportMarkdown->setObjectName(QStringLiteral("exportMarkdown"));
    top->addWidget(m_databaseLabel, 1);
    top->addWidget(open);
    top->addWidget(refreshButton);
    top->addSpacing(16);
    top->addWidget(m_exportCsv);
    top->addWidget(m_exportJson);
    top->addWidget(m_exportMarkdown);
    layout->addLayout(top);
    connect(open, &QPushButton::clicked, this, &ResultsPage::chooseDatabase);
    connect(refreshButton, &QPushButton::clicked, this, &ResultsPage::refresh);
    connect(m_exportCsv, &QPushButton::clicked, this, [this] { exportWithDialog(ExportFormat::Csv); });
    connect(m_exportJson, &QPushButton::clicked, this, [this] { exportWithDialog(ExportFormat::Json); });
    connect(m_exportMarkdown, &QPushButton::clicked, this, [this] { exportWithDialog(ExportFormat::Markdown); });

    // Where a launched run went, when that is not the database on the page.
    m_offerBar = new QWidget(this);
    m_offerBar->setObjectName(QStringLiteral("offerBar"));
    auto* offerLayout = new QHBoxLayout(m_offerBar);
    offerLayout->setContentsMargins(6, 2, 6, 2);
    m_offerText = new QLabel(m_offerBar);
    m_offerText->setObjectName(QStringLiteral("offerText"));
    m_offerText->setWordWrap(true);
    auto* openOffered = new QPushButton(tr("Open it here"), m_offerBar);
    openOffered->setObjectName(QStringLiteral("openOffered"));
    auto* dismiss = new QPushButton(tr("Dismiss"), m_offerBar);
    offerLayout->addWidget(m_offerText, 1);
    offerLayout->addWidget(openOffered);
    offerLayout->addWidget(dismiss);
    m_offerBar->setAutoFillBackground(true);
    m_offerBar->setBackgroundRole(QPalette::AlternateBase);
    m_offerBar->hide();
    layout->addWidget(m_offerBar);
    connect(openOffered, &QPushButton::clicked, this, [this] {
        const QString path = m_offered;
        offerDatabase(QString());
        Q_EMIT openRequested(path);
    });
    connect(dismiss, &QPushButton::clicked, this, [this] { offerDatabase(QString()); });

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    layout->addWidget(splitter, 1);

    // Left: the runs, checkable.
    auto* runsBox = new QGroupBox(tr("Runs (check to compare)"), splitter);
    auto* runsLayout = new QVBoxLayout(runsBox);
    m_runsStack = new QStackedWidget(runsBox);
    m_runsEmpty = new QLabel(runsBox);
    m_runsEmpty->setObjectName(QStringLiteral("runsEmpty"));
    m_runsEmpty->setWordWrap(true);
    m_runsEmpty->setAlignment(Qt::AlignCenter);
    auto* sorted = new QSortFilterProxyModel(this);
    sorted->setSourceModel(m_runs);
    sorted->setSortRole(RunListModel::SortRole);
    m_runList = new QTableView(runsBox);
    m_runList->setObjectName(QStringLiteral("runList"));
    m_runList->setModel(sorted);
    m_runList->setSortingEnabled(true);
    m_runList->sortByColumn(RunListModel::IdColumn, Qt::AscendingOrder);
    m_runList->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_runList->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_runList->verticalHeader()->hide();
    m_runList->verticalHeader()->setDefaultSectionSize(m_runList->fontMetrics().height() + 8);
    m_runList->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_runList->horizontalHeader()->setSectionResizeMode(RunListModel::NameColumn, QHeaderView::Stretch);
    m_runList->setWordWrap(false);
    m_runList->setColumnHidden(RunListModel::CreatedColumn, true);
    m_runList->setColumnHidden(RunListModel::RegimeColumn, true); // the name starts with it
    m_runList->setColumnHidden(RunListModel::TasksColumn, true);  // in the correct column's tooltip
    // Status and correct % are Table I's columns: the list keeps to what picks a run, so Table I
    // gets the width at 1280×720.
    m_runList->setColumnHidden(RunListModel::StatusColumn, true);
    m_runList->setColumnHidden(RunListModel::CorrectColumn, true);
    connect(m_runList->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this, sorted](const QModelIndex& current) {
                const qint64 id = sorted->mapToSource(current).data(RunListModel::RunIdRole).toLongLong();
                if (id > 0)
                    Q_EMIT runSelected(m_databasePath, id);
            });
    connect(m_runList, &QTableView::doubleClicked, this, [this, sorted](const QModelIndex& index) {
        const qint64 id = sorted->mapToSource(index).data(RunListModel::RunIdRole).toLongLong();
        if (id > 0)
            Q_EMIT runActivated(m_databasePath, id);
    });
    m_runsStack->addWidget(m_runsEmpty);
    m_runsStack->addWidget(m_runList);
    runsLayout->addWidget(m_runsStack, 1);
    auto* checkButtons = new QHBoxLayout;
    auto* all = new QPushButton(tr("Check all"), runsBox);
    auto* none = new QPushButton(tr("Check none"), runsBox);
    connect(all, &QPushButton::clicked, this, [this] { m_runs->setAllChecked(true); });
    connect(none, &QPushButton::clicked, this, [this] { m_runs->setAllChecked(false); });
    checkButtons->addWidget(all);
    checkButtons->addWidget(none);
    checkButtons->addStretch(1);
    runsLayout->addLayout(checkButtons);

    // Right: the tables.
    m_tablesStack = new QStackedWidget(splitter);
    m_tablesEmpty = new QLabel(m_tablesStack);
    m_tablesEmpty->setObjectName(QStringLiteral("tablesEmpty"));
    m_tablesEmpty->setAlignment(Qt::AlignCenter);
    m_tablesEmpty->setWordWrap(true);
    auto* tables = new QWidget(m_tablesStack);
    auto* tablesLayout = new QVBoxLayout(tables);
    tablesLayout->setContentsMargins(0, 0, 0, 0);
    m_tablesStack->addWidget(m_tablesEmpty);
    m_tablesStack->addWidget(tables);

    m_runTableModel = new QStandardItemModel(this);
    m_levelTableModel = new QStandardItemModel(this);
    m_pairTableModel = new QStandardItemModel(this);
    m_routingTableModel = new QStandardItemModel(this);
    m_ablationTableModel = new QStandardItemModel(this);

    // Table I on top, as tall as its rows (up to what the page leaves), the other tables in tabs
    // under it: at 1280×720 every run of Table I stays in view (a splitter of three gave it two rows).
    auto* tableOne = new QGroupBox(tr("Table I: per run"), tables);
    auto* tableOneLayout = new QVBoxLayout(tableOne);
    m_runTable = makeTable(m_runTableModel, QStringLiteral("runTable"), tableOne);
    m_runTable->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    m_runTable->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Maximum);
    tableOneLayout->addWidget(m_runTable);
    // Evaluations a run stored as correct that no table counts, and why (issue 11: the window says why).
    m_notCounted = noteLabel(QString(), tableOne);
    m_notCounted->setObjectName(QStringLiteral("notCountedNote"));
    m_notCounted->setStyleSheet(QStringLiteral("color: #b01e1e;"));
    m_notCounted->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_notCounted->hide();
    tableOneLayout->addWidget(m_notCounted);

    m_detailTabs = new QTabWidget(tables);
    m_detailTabs->setObjectName(QStringLiteral("detailTabs"));
    auto* tableTwo = new QWidget(m_detailTabs);
    auto* tableTwoLayout = new QVBoxLayout(tableTwo);
    m_levelTable = makeTable(m_levelTableModel, QStringLiteral("levelTable"), tableTwo);
    tableTwoLayout->addWidget(m_levelTable);
    m_detailTabs->addTab(tableTwo, tr("Table II: per level"));
    // Per task, one level at a time (issue 37 item 5: a level of KernelBench has up to 100 tasks):
    // the candidate each run keeps and the task's one best (core/study/taskbest.h).
    auto* perTask = new QWidget(m_detailTabs);
    auto* perTaskLayout = new QVBoxLayout(perTask);
    auto* levelRow = new QHBoxLayout;
    auto* levelLabel = new QLabel(tr("Level:"), perTask);
    m_taskLevel = new QComboBox(perTask);
    m_taskLevel->setObjectName(QStringLiteral("taskLevel"));
    levelLabel->setBuddy(m_taskLevel);
    m_taskCount = new QLabel(perTask);
    m_taskCount->setObjectName(QStringLiteral("taskCount"));
    levelRow->addWidget(levelLabel);
    levelRow->addWidget(m_taskLevel);
    levelRow->addWidget(m_taskCount, 1);
    perTaskLayout->addLayout(levelRow);
    m_taskTableModel = new QStandardItemModel(this);
    m_taskTable = makeTable(m_taskTableModel, QStringLiteral("taskTable"), perTask);
    perTaskLayout->addWidget(m_taskTable, 1);
    m_detailTabs->addTab(perTask, tr("Per task"));
    connect(m_taskLevel, &QComboBox::currentIndexChanged, this, &ResultsPage::fillTaskTable);
    auto* pairs = new QWidget(m_detailTabs);
    auto* pairsLayout = new QVBoxLayout(pairs);
    m_pairTable = makeTable(m_pairTableModel, QStringLiteral("pairTable"), pairs);
    pairsLayout->addWidget(m_pairTable, 1);
    auto* noise = noteLabel(noiseCaveatText(), pairs);
    noise->setObjectName(QStringLiteral("noiseCaveat"));
    pairsLayout->addWidget(noise);
    m_detailTabs->addTab(pairs, tr("Paired comparisons"));

    auto* routing = new QWidget(m_detailTabs);
    auto* routingLayout = new QVBoxLayout(routing);
    m_routingTable = makeTable(m_routingTableModel, QStringLiteral("routingTable"), routing);
    routingLayout->addWidget(m_routingTable, 1);
    // Why each run is or is not used, one line a run: scrolled, so ten runs' reasons never take
    // Table I's rows out of view.
    auto* routingScroll = new QScrollArea(routing);
    routingScroll->setWidgetResizable(true);
    routingScroll->setFrameShape(QFrame::NoFrame);
    m_routingNote = noteLabel(routingCaveatText(), routingScroll);
    m_routingNote->setObjectName(QStringLiteral("routingNote"));
    m_routingNote->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    routingScroll->setWidget(m_routingNote);
    routingLayout->addWidget(routingScroll, 1);
    m_detailTabs->addTab(routing, tr("Routing estimate"));

    auto* ablations = new QWidget(m_detailTabs);
    auto* ablationLayout = new QVBoxLayout(ablations);
    m_ablationTable = makeTable(m_ablationTableModel, QStringLiteral("ablationTable"), ablations);
    ablationLayout->addWidget(m_ablationTable, 1);
    m_ablationNote = noteLabel(QString(), ablations);
    m_ablationNote->setObjectName(QStringLiteral("ablationNote"));
    ablationLayout->addWidget(m_ablationNote);
    m_detailTabs->addTab(ablations, tr("Ablations"));
    // fast_p at KernelBench's thresholds, plain and clear (issue 13).
    m_fastPTableModel = new QStandardItemModel(this);
    auto* fastP = new QWidget(m_detailTabs);
    auto* fastPLayout = new QVBoxLayout(fastP);
    m_fastPTable = makeTable(m_fastPTableModel, QStringLiteral("fastPTable"), fastP);
    fastPLayout->addWidget(m_fastPTable, 1);
    fastPLayout->addWidget(noteLabel(fastPNoteText(), fastP));
    m_detailTabs->addTab(fastP, tr("fast_p"));

    tablesLayout->addWidget(tableOne, 0);
    tablesLayout->addWidget(m_detailTabs, 1);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 4);
    splitter->setSizes({190, 1090}); // the list needs its check boxes, ids and names; Table I the rest

    m_statusLabel = new ElidedLabel(this);
    m_statusLabel->setObjectName(QStringLiteral("statusLabel"));
    layout->addWidget(m_statusLabel);
}

void ResultsPage::offerDatabase(const QString& path, const QString& runLabel)
{
    const bool shown =
        !path.isEmpty() && QFileInfo(path).absoluteFilePath() != QFileInfo(m_databasePath).absoluteFilePath();
    m_offered = shown ? path : QString();
    if (shown)
        m_offerText->setText(tr("Run %1 is written to <b>%2</b>, not to the database shown here (%3).")
                                 .arg(runLabel.isEmpty() ? tr("launched") : runLabel.toHtmlEscaped(),
                                      QDir::toNativeSeparators(path).toHtmlEscaped(),
                                      QFileInfo(m_databasePath).fileName().toHtmlEscaped()));
    m_offerBar->setVisible(shown);
}

bool ResultsPage::setDatabase(const QString& path, QString* error)
{
    m_report.reset();
    m_jobs->cancel(kReportSlot); // a report still being built is for the old database
    m_jobs->cancel(kRunsSlot);
    m_databasePath = path;
    m_store.reset();
    m_runs->clear();
    if (path.isEmpty()) {
        m_databaseLabel->clear();
        showEmptyState(tr("No run database open: File > Open run database…"));
        updateActions();
        Q_EMIT databaseChanged(path);
        return true;
    }
    auto store = std::make_unique<RunStore>();
    if (!QFileInfo(path).isFile() || !store->open(path)) {
        const QString why = QFileInfo(path).isFile() ? store->errorString() : tr("no such file: %1").arg(path);
        m_databaseLabel->setText(tr("Database: %1").arg(QDir::toNativeSeparators(path)));
        showEmptyState(tr("Cannot open the run database: %1").arg(why));
        if (error)
            *error = why;
        updateActions();
        return false;
    }
    m_store = std::move(store);
    if (!m_offered.isEmpty() && QFileInfo(m_offered).absoluteFilePath() == QFileInfo(path).absoluteFilePath())
        offerDatabase(QString()); // the offered file is now the one shown
    // A read-only file or folder is read as it is (RunStore): said here, where the runs are shown.
    m_databaseLabel->setText(m_store->isReadOnly() ? tr("Database: %1 (read-only)").arg(QDir::toNativeSeparators(path))
                                                   : tr("Database: %1").arg(QDir::toNativeSeparators(path)));
    m_databaseLabel->setToolTip(m_store->isReadOnly()
                                    ? QFileInfo(path).absoluteFilePath() + QLatin1Char('\n') + m_store->openNote()
                                    : QFileInfo(path).absoluteFilePath());
    m_tablesEmpty->setText(tr("Computing the report of %1 …").arg(QFileInfo(path).fileName()));
    m_tablesStack->setCurrentWidget(m_tablesEmpty);
    m_runsEmpty->setText(tr("Reading the runs of %1 …").arg(QFileInfo(path).fileName()));
    m_runsStack->setCurrentWidget(m_runsEmpty);
    loadRuns(true);
    Q_EMIT databaseChanged(path);
    return true;
}

void ResultsPage::refresh()
{
    if (!m_store)
        return;
    loadRuns(false);
}

void ResultsPage::loadRuns(bool checkAll)
{
    // Every evaluation of the file is read for the list's counts: in the pool, with a connection
    // of its own, so a large database or a run writing to it never stalls the window.
    const QString path = m_databasePath;
    m_jobs->run(
        kRunsSlot,
        [path] {
            RunStore store;
            store.open(path);
            return RunListModel::readEntries(store);
        },
        [this, checkAll](QList<RunListEntry>&& entries) {
            m_runs->setEntries(entries);
            if (checkAll)
                m_runs->setAllChecked(true); // schedules the report
            scheduleReport();
            Q_EMIT runsLoaded();
        });
}

QList<qint64> ResultsPage::checkedRuns() const
{
    return m_runs->checkedRunIds();
}

void ResultsPage::setCheckedRuns(const QList<qint64>& runIds)
{
    const QSignalBlocker blocker(m_runs);
    m_runs->setAllChecked(false);
    for (qint64 id : runIds)
        m_runs->setChecked(id, true);
    scheduleReport();
}

void ResultsPage::setBootstrapOptions(const BootstrapOptions& options)
{
    m_bootstrap = options;
    scheduleReport();
}

void ResultsPage::scheduleReport()
{
    // Check marks often change several at a time: one report per event-loop turn.
    if (m_reportScheduled)
        return;
    m_reportScheduled = true;
    QTimer::singleShot(0, this, [this] {
        m_reportScheduled = false;
        startReport();
    });
}

void ResultsPage::startReport()
{
    m_jobs->cancel(kReportSlot); // whatever is shown next, a report still being built is stale
    if (!m_store || m_jobs->isBusy(kRunsSlot)) {
        updateActions(); // the run list, once read, schedules the report
        return;
    }
    if (m_runs->rowCount() == 0) {
        m_report.reset();
        showEmptyState(
            tr("No runs in %1 yet: start one on the Launch page.").arg(QFileInfo(m_databasePath).fileName()));
        updateActions();
        Q_EMIT reportReady();
        return;
    }
    m_runsStack->setCurrentWidget(m_runList);
    const QList<qint64> ids = m_runs->checkedRunIds();
    if (ids.isEmpty()) {
        m_report.reset();
        m_tablesEmpty->setText(tr("Check one or more runs on the left to see their tables."));
        m_tablesStack->setCurrentWidget(m_tablesEmpty);
        m_statusLabel->clear();
        updateActions();
        Q_EMIT reportReady();
        return;
    }
    const QString path = m_databasePath;
    const ReportOptions options{m_bootstrap};
    m_jobs->run(
        kReportSlot,
        [path, ids, options] {
            ReportResult result;
            RunStore store; // its own connection, in the pool's thread
            if (!store.open(path))
                result.error = store.errorString();
            else
                result.report = buildReport(store, ids, options, &result.error);
            if (result.report)
                result.notCounted = notCountedEvaluations(store, *result.report);
            return result;
        },
        [this](ReportResult&& result) {
            m_notCounted->setText(result.notCounted.isEmpty()
                                      ? QString()
                                      : tr("Not counted as correct or fast (%1):\n").arg(result.notCounted.size()) +
                                            result.notCounted.join(QLatin1Char('\n')));
            m_notCounted->setVisible(!result.notCounted.isEmpty());
            showReport(result.report, result.error);
            updateActions();
        });
    m_statusLabel->setText(tr("Computing the report of %1 …").arg(counted(ids.size(), tr("run"), tr("runs"))));
    if (!m_report) {
        // Nothing shown yet: say what is happening, not "no database".
        m_tablesEmpty->setText(m_statusLabel->text());
        m_tablesStack->setCurrentWidget(m_tablesEmpty);
    }
    updateActions();
}

void ResultsPage::showEmptyState(const QString& text)
{
    m_runsEmpty->setText(text);
    m_runsStack->setCurrentWidget(m_runsEmpty);
    m_tablesEmpty->setText(text);
    m_tablesStack->setCurrentWidget(m_tablesEmpty);
    m_statusLabel->clear();
}

void ResultsPage::fill(QStandardItemModel* model, QTableView* view, const TextTable& table)
{
    model->clear();
    model->setColumnCount(int(table.headers.size()));
    model->setHorizontalHeaderLabels(table.headers);
    for (int r = 0; r < table.rows.size(); ++r) {
        QList<QStandardItem*> items;
        const QStringList& row = table.rows.at(r);
        for (int c = 0; c < row.size(); ++c) {
            auto* item = new QStandardItem(row.at(c));
            item->setEditable(false);
            if (c >= table.textColumns && c < row.size() - table.trailingTextColumns)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            const QString tip = table.tooltips.value(r).value(c);
            if (!tip.isEmpty())
                item->setToolTip(tip);
            items.append(item);
        }
        model->appendRow(items);
    }
    view->resizeColumnsToContents();
    if (view == m_runTable) {
        // A long run name ("agent −competence_matched answer pilot-v1/generator") wraps onto a
        // second line rather than pushing the speed-up out of a 1280-px window; never elided.
        constexpr int kRunColumnMax = 280;
        if (view->columnWidth(0) > kRunColumnMax) {
            view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Interactive);
            view->setWordWrap(true);
            view->setColumnWidth(0, kRunColumnMax);
            view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
        }
    }
}

void ResultsPage::showReport(const std::optional<Report>& report, const QString& error)
{
    m_report = report;
    if (!report) {
        m_tablesEmpty->setText(tr("The report could not be built: %1").arg(error));
        m_tablesStack->setCurrentWidget(m_tablesEmpty);
        m_statusLabel->setText(error);
        Q_EMIT reportReady();
        return;
    }
    fill(m_runTableModel, m_runTable, runTable(*report));
    fill(m_levelTableModel, m_levelTable, levelTable(*report));
    fill(m_pairTableModel, m_pairTable, pairTable(*report));
    fill(m_routingTableModel, m_routingTable, routingTable(*report));
    fill(m_ablationTableModel, m_ablationTable, ablationTable(*report));
    fill(m_fastPTableModel, m_fastPTable, fastPTable(*report));
    m_routingNote->setText(routingExplanationText(*report));
    {
        // The level shown stays when it is still there (a refresh, other check marks).
        const int shown = m_taskLevel->currentData().toInt();
        const QSignalBlocker blocker(m_taskLevel);
        m_taskLevel->clear();
        for (const int level : report->levels)
            m_taskLevel->addItem(QStringLiteral("L%1").arg(level), level);
        const int at = m_taskLevel->findData(shown);
        m_taskLevel->setCurrentIndex(at >= 0 ? at : 0);
    }
    fillTaskTable();
    m_ablationNote->setText(
        m_ablationTableModel->rowCount() > 0
            ? tr("Each run with a part switched off against the same regime with every part on, on the tasks both "
                 "have. ") +
                  noiseCaveatText()
            : tr("No checked run has a part switched off (Launch page: ablation switches)."));
    m_tablesStack->setCurrentIndex(1);
    // Said first: a recorded server's one answer per task makes every regime tie, whatever the loop.
    const QString same = sameAnswersNote(*report);
    m_statusLabel->setText(tr("%1 compared.").arg(counted(report->runs.size(), tr("run"), tr("runs"))) +
                           (same.isEmpty() ? QString() : QLatin1Char(' ') + same) +
                           tr(" 95 % intervals: exact binomial (Clopper–Pearson) for every share of tasks, bootstrap "
                              "over tasks for the geometric mean (%1 resamples, seed %2).")
                               .arg(m_bootstrap.resamples)
                               .arg(m_bootstrap.seed));
    Q_EMIT reportReady();
}

void ResultsPage::fillTaskTable()
{
    if (!m_report)
        return;
    const int level = m_taskLevel->currentData().toInt();
    const TextTable table = taskTable(*m_report, level);
    fill(m_taskTableModel, m_taskTable, table);
    m_taskCount->setText(tr("%1 of level %2: the task's best of these runs, then the candidate each run keeps")
                             .arg(counted(table.rows.size(), tr("task"), tr("tasks")))
                             .arg(level));
}

bool ResultsPage::showTaskLevel(int level)
{
    const int at = m_taskLevel->findData(level);
    if (at < 0)
        return false;
    m_taskLevel->setCurrentIndex(at);
    fillTaskTable();
    m_detailTabs->setCurrentWidget(m_taskTable->parentWidget());
    return true;
}

bool ResultsPage::exportTo(const QString& path, ExportFormat format, QString* error) const
{
    if (!m_report) {
        if (error)
            *error = tr("no report to export: check one or more runs");
        return false;
    }
    QByteArray bytes;
    switch (format) {
    case ExportFormat::Csv: bytes = reportCsv(*m_report).toUtf8(); break;
    case ExportFormat::Json: bytes = QJsonDocument(reportJson(*m_report)).toJson(QJsonDocument::Indented); break;
    case ExportFormat::Markdown: bytes = reportMarkdown(*m_report).toUtf8(); break;
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        if (error)
            *error = tr("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

void ResultsPage::chooseDatabase()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Open run database"), QFileInfo(m_databasePath).path(),
                                                      tr("Run databases (*.db *.sqlite *.sqlite3);;All files (*)"));
    // The window opens it for every page, and says what a file that is not a run store is.
    if (!path.isEmpty())
        Q_EMIT openRequested(path);
}

void ResultsPage::exportWithDialog(ExportFormat format)
{
    QString suffix, filter;
    switch (format) {
    case ExportFormat::Csv:
        suffix = QStringLiteral("csv");
        filter = tr("CSV (*.csv)");
        break;
    case ExportFormat::Json:
        suffix = QStringLiteral("json");
        filter = tr("JSON (*.json)");
        break;
    case ExportFormat::Markdown:
        suffix = QStringLiteral("md");
        filter = tr("Markdown (*.md)");
        break;
    }
    const QString base = QFileInfo(m_databasePath).completeBaseName();
    const QString suggested =
        QDir(QFileInfo(m_databasePath).path()).filePath(QStringLiteral("%1-report.%2").arg(base, suffix));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export report"), suggested, filter);
    if (path.isEmpty())
        return;
    QString error;
    if (exportTo(path, format, &error))
        m_statusLabel->setText(tr("Report written to %1").arg(QDir::toNativeSeparators(path)));
    else
        m_statusLabel->setText(error);
}

void ResultsPage::updateActions()
{
    const bool ready = m_report.has_value() && !isBuilding();
    m_exportCsv->setEnabled(ready);
    m_exportJson->setEnabled(ready);
    m_exportMarkdown->setEnabled(ready);
}

} // namespace kwb::app

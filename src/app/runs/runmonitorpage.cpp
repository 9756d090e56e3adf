#include "app/runs/runmonitorpage.h"

#include "app/runs/reporttables.h"
#include "app/runs/runmanager.h"
#include "app/runs/runsession.h"
#include "app/runs/runtreemodel.h"
#include "app/widgets/elidedlabel.h"
#include "core/protocol/evaluationresult.h"
#include "core/run/runlaunch.h"
#include "core/run/runname.h"
#include "core/study/evaluationsummary.h"
#include "core/study/provenance.h"

#include <QCheckBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace kwb::app {

namespace {

QPlainTextEdit* monospaceView(const QString& name, QWidget* parent)
{
    auto* view = new QPlainTextEdit(parent);
    view->setObjectName(name);
    view->setReadOnly(true);
    view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    view->setLineWrapMode(QPlainTextEdit::NoWrap);
    return view;
}

QString kNoUnitText()
{
    return RunMonitorPage::tr("Select a sample to see the model's text, its compile log and evaluation.");
}

} // namespace

RunMonitorPage::RunMonitorPage(RunManager* manager, QWidget* parent)
    : QWidget(parent)
    , m_manager(manager)
    , m_model(new RunTreeModel(this))
{
    qRegisterMetaType<RunProblem>();
    buildUi();
    m_tick = new QTimer(this);
    m_tick->setInterval(1000);
    connect(m_tick, &QTimer::timeout, this, &RunMonitorPage::updateProgress);
    if (m_manager) {
        connect(m_manager, &RunManager::sessionStarted, this, &RunMonitorPage::setSession);
        if (m_manager->current())
            setSession(m_manager->current());
    }
}

RunMonitorPage::~RunMonitorPage() = default;

void RunMonitorPage::buildUi()
{
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    m_stack = new QStackedWidget(this);
    outer->addWidget(m_stack);

    m_empty = new QLabel(tr("No run to show: start one on the Launch page, or double-click a run on the Results page "
                            "to open it."),
                         m_stack);
    m_empty->setObjectName(QStringLiteral("monitorEmpty"));
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_stack->addWidget(m_empty);

    auto* page = new QWidget(m_stack);
    m_stack->addWidget(page);
    auto* layout = new QVBoxLayout(page);

    auto* header = new QHBoxLayout;
    // One line each, elided (the whole text in the tooltip): a failed run's error once made the
    // window 2,766 px wide (issue 38).
    m_title = new ElidedLabel(page);
    m_title->setObjectName(QStringLiteral("runTitle"));
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_state = new ElidedLabel(page);
    m_state->setObjectName(QStringLiteral("runStateLabel"));
    m_pause = new QPushButton(tr("Pause"), page);
    m_pause->setObjectName(QStringLiteral("monitorPause"));
    m_cancel = new QPushButton(tr("Cancel"), page);
    m_cancel->setObjectName(QStringLiteral("monitorCancel"));
    m_resume = new QPushButton(tr("Resume run"), page);
    m_resume->setObjectName(QStringLiteral("monitorResume"));
    m_resume->setToolTip(tr("Continue this run where it stopped (finished units are kept)"));
    header->addWidget(m_title, 1);
    header->addWidget(m_state, 1);
    header->addWidget(m_pause);
    header->addWidget(m_cancel);
    header->addWidget(m_resume);
    layout->addLayout(header);
    connect(m_pause, &QPushButton::clicked, this, [this] {
        if (!m_session)
            return;
        if (m_session->state() == RunSession::State::Paused)
            m_session->resume();
        else
            m_session->pause();
    });
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_session)
            m_session->cancel();
    });
    connect(m_resume, &QPushButton::clicked, this, [this] {
        if (!m_openedPath.isEmpty() && m_openedRunId > 0)
            Q_EMIT resumeRequested(m_openedPath, m_openedRunId);
    });

    auto* progressRow = new QHBoxLayout;
    m_progress = new QProgressBar(page);
    m_progress->setObjectName(QStringLiteral("progressBar"));
    m_progress->setFormat(tr("%v/%m tasks"));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progressText = new ElidedLabel(page);
    m_progressText->setObjectName(QStringLiteral("progressText"));
    m_follow = new QCheckBox(tr("Follow live output"), page);
    m_follow->setObjectName(QStringLiteral("followLive"));
    m_follow->setChecked(true);
    connect(m_follow, &QCheckBox::toggled, this, [this](bool on) { m_followLive = on; });
    progressRow->addWidget(m_progress, 1);
    progressRow->addWidget(m_progressText, 2);
    progressRow->addWidget(m_follow);
    layout->addLayout(progressRow);

    auto* vertical = new QSplitter(Qt::Vertical, page);
    layout->addWidget(vertical, 1);
    auto* horizontal = new QSplitter(Qt::Horizontal, vertical);

    m_tree = new QTreeView(horizontal);
    m_tree->setObjectName(QStringLiteral("runTree"));
    m_tree->setModel(m_model);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    m_tree->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // The item column as wide as its deepest row ("Sample 12" under a turn under a task): as a
    // stretched column it was squeezed to "Sa…" and "L1/…", so rows read as overlapping or repeated.
    m_tree->header()->setSectionResizeMode(RunTreeModel::ItemColumn, QHeaderView::ResizeToContents);
    m_tree->header()->setStretchLastSection(true);
    connect(m_tree->selectionModel(), &QItemSelectionModel::currentChanged, this, &RunMonitorPage::showDetails);
    connect(m_tree, &QTreeView::clicked, this, [this] { m_follow->setChecked(false); });
    connect(m_model, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex& parent, int first, int last) {
        // New turns and samples are what the user watches for: show them.
        if (parent.isValid())
            m_tree->expand(parent);
        for (int row = first; row <= last; ++row)
            m_tree->expand(m_model->index(row, 0, parent));
    });
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] { m_tree->expandToDepth(1); });
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex& topLeft, const QModelIndex& bottomRight) {
                // (Streamed text sends no dataChanged: onStreamed appends it.)
                const QModelIndex current = m_tree->currentIndex();
                if (current.isValid() && current.parent() == topLeft.parent() && current.row() >= topLeft.row() &&
                    current.row() <= bottomRight.row())
                    showDetails();
            });

    auto* details = new QWidget(horizontal);
    auto* detailsLayout = new QVBoxLayout(details);
    detailsLayout->setContentsMargins(0, 0, 0, 0);
    m_unitHeader = new QLabel(kNoUnitText(), details);
    m_unitHeader->setObjectName(QStringLiteral("unitHeader"));
    m_unitHeader->setWordWrap(true);
    m_unitHeader->setTextFormat(Qt::RichText);
    detailsLayout->addWidget(m_unitHeader);
    m_tabs = new QTabWidget(details);
    m_tabs->setObjectName(QStringLiteral("detailTabs"));
    m_text = monospaceView(QStringLiteral("modelText"), m_tabs);
    m_text->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    m_compileLog = monospaceView(QStringLiteral("compileLog"), m_tabs);
    // The evaluation in words (core/study/evaluationsummary.h), the worker's JSON behind a toggle.
    auto* evaluationTab = new QWidget(m_tabs);
    auto* evaluationLayout = new QVBoxLayout(evaluationTab);
    evaluationLayout->setContentsMargins(0, 0, 0, 0);
    m_evaluation = monospaceView(QStringLiteral("evaluationText"), evaluationTab);
    m_evaluation->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    m_rawJson = new QCheckBox(tr("Show the worker's raw JSON"), evaluationTab);
    m_rawJson->setObjectName(QStringLiteral("rawJsonToggle"));
    connect(m_rawJson, &QCheckBox::toggled, this, &RunMonitorPage::showDetails);
    evaluationLayout->addWidget(m_evaluation, 1);
    evaluationLayout->addWidget(m_rawJson);
    m_tabs->addTab(m_text, tr("Model text"));
    m_tabs->addTab(m_compileLog, tr("Compile log"));
    m_tabs->addTab(evaluationTab, tr("Evaluation"));
    // What the sample was actually asked, every role of every turn up to its own (the run store
    // keeps each prompt as sent: provenance.h's promptsSentFor).
    m_prompts = monospaceView(QStringLiteral("promptsSent"), m_tabs);
    m_prompts->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    m_tabs->addTab(m_prompts, tr("Prompts sent"));
    detailsLayout->addWidget(m_tabs, 1);
    horizontal->setStretchFactor(0, 3);
    horizontal->setStretchFactor(1, 2);

    auto* problems = new QWidget(vertical);
    auto* problemsLayout = new QVBoxLayout(problems);
    problemsLayout->setContentsMargins(0, 0, 0, 0);
    m_problemsTitle = new QLabel(problems);
    m_problemsTitle->setObjectName(QStringLiteral("problemsTitle"));
    problemsLayout->addWidget(m_problemsTitle);
    m_problems = new QTreeWidget(problems);
    m_problems->setObjectName(QStringLiteral("problemList"));
    m_problems->setHeaderLabels({tr("Time"), tr("Task"), tr("Source"), tr("Problem")});
    m_problems->setRootIsDecorated(false);
    m_problems->setUniformRowHeights(true);
    m_problems->setMinimumHeight(90);
    m_problems->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_problems->header()->setStretchLastSection(true);
    problemsLayout->addWidget(m_problems, 1);
    vertical->addWidget(horizontal);
    vertical->addWidget(problems);
    vertical->setStretchFactor(0, 4);
    vertical->setStretchFactor(1, 1);
    vertical->setCollapsible(1, false); // problems stay in view
    m_problemsTitle->setText(tr("Problems: none"));
}

void RunMonitorPage::detachSession()
{
    if (m_session)
        m_session->disconnect(this);
    m_session = nullptr;
    m_tick->stop();
}

void RunMonitorPage::clear()
{
    detachSession();
    m_openedStore.reset();
    m_openedPath.clear();
    m_openedRunId = 0;
    m_model->setLive(false);
    m_model->clear();
    m_problems->clear();
    m_problemsTitle->setText(tr("Problems: none"));
    m_text->clear();
    m_compileLog->clear();
    m_evaluation->clear();
    m_prompts->clear();
    m_promptsShown.clear();
    // The unit shown belonged to the run before: nothing of it stays (its header did).
    m_unitHeader->setText(kNoUnitText());
    m_stack->setCurrentWidget(m_empty);
}

void RunMonitorPage::setSession(RunSession* session)
{
    clear();
    if (!session)
        return;
    m_session = session;
    m_stack->setCurrentIndex(1);
    connect(session, &RunSession::runReady, this, &RunMonitorPage::onRunReady);
    connect(session, &RunSession::stateChanged, this, &RunMonitorPage::onStateChanged);
    connect(session, &RunSession::progressChanged, this, &RunMonitorPage::updateProgress);
    connect(session, &RunSession::countsChanged, this, &RunMonitorPage::updateProgress);
    connect(session, &RunSession::preparing, this, &RunMonitorPage::updateProgress);
    connect(session, &RunSession::responseStored, m_model, &RunTreeModel::appendResponse);
    connect(session, &RunSession::evaluationStored, m_model, &RunTreeModel::appendEvaluation);
    connect(session, &RunSession::generationStarted, this, [this](const UnitKey& unit) {
        m_model->setGenerating(unit, true);
        if (m_followLive && unit.sample == 0)
            selectUnit(unit);
    });
    connect(session, &RunSession::generationEnded, this, [this](const UnitKey& unit) {
        m_model->setGenerating(unit, false);
        m_model->removeLiveOnly(unit);
    });
    connect(session, &RunSession::textStreamed, this, &RunMonitorPage::onStreamed);
    connect(session, &RunSession::problem, this, &RunMonitorPage::addProblem);
    if (session->runId() > 0)
        onRunReady(session->runId());
    onStateChanged();
}

void RunMonitorPage::onRunReady(qint64 runId)
{
    if (!m_session)
        return;
    m_model->setLive(true);
    m_model->load(m_session->store(), runId);
    updateHeader();
}

void RunMonitorPage::onStateChanged()
{
    if (m_session) {
        const bool running = m_session->isActive();
        m_model->setLive(running);
        if (running)
            m_tick->start();
        else
            m_tick->stop();
    }
    updateHeader();
    updateProgress();
}

void RunMonitorPage::updateHeader()
{
    if (m_session) {
        const RunSession::State state = m_session->state();
        m_title->setText(
            tr("Run %1 · %2").arg(m_session->label(), QFileInfo(m_session->environment().databasePath).fileName()));
        QString stateText = RunSession::stateText(state);
        if (state == RunSession::State::Failed)
            stateText += QStringLiteral(": ") + m_session->errorString();
        m_state->setText(stateText);
        m_pause->setVisible(true);
        m_cancel->setVisible(true);
        m_resume->setVisible(false);
        m_pause->setEnabled(state == RunSession::State::Running || state == RunSession::State::Paused);
        m_pause->setText(state == RunSession::State::Paused ? tr("Resume") : tr("Pause"));
        m_cancel->setEnabled(m_session->isActive() || state == RunSession::State::Paused);
        return;
    }
    if (m_openedStore) {
        m_title->setText(tr("Run %1 · %2").arg(runLabel(m_openedInfo), QFileInfo(m_openedPath).fileName()));
        m_title->setToolTip(m_openedInfo.name);
        m_state->setText(m_openedInfo.status);
        m_pause->setVisible(false);
        m_cancel->setVisible(false);
        m_resume->setVisible(m_openedInfo.status != RunStatus::Finished);
        // A resumed run writes into its own file: not into one that may not be written.
        const bool readOnly = m_openedStore->isReadOnly();
        m_resume->setEnabled(!readOnly);
        m_resume->setToolTip(readOnly ? tr("Cannot resume here: %1").arg(m_openedStore->openNote())
                                      : tr("Continue this run where it stopped (finished units are kept)"));
    }
}

QString RunMonitorPage::progressText() const
{
    return m_progressText->text();
}

void RunMonitorPage::updateProgress()
{
    if (m_session) {
        const RunSession::State state = m_session->state();
        if (state == RunSession::State::Preparing && m_session->runId() == 0) {
            m_progress->setRange(0, 0); // busy: the worker is asked for the tasks' facts
            m_progressText->setText(
                tr("Asking the worker for the tasks' facts … (%1 elapsed)").arg(elapsedClock(m_session->activeMs())));
            return;
        }
        const int total = qMax(1, m_session->tasksTotal());
        m_progress->setRange(0, total);
        m_progress->setValue(qMin(m_session->tasksDone(), total));
        QString text = tr("%1/%2 tasks · %3 candidates evaluated (%4 correct) · %5 elapsed")
                           .arg(m_session->tasksDone())
                           .arg(m_session->tasksTotal())
                           .arg(m_session->candidatesEvaluated())
                           .arg(m_session->candidatesCorrect())
                           .arg(elapsedClock(m_session->activeMs()));
        if (m_session->isActive()) {
            const std::optional<qint64> left = m_session->estimatedRemainingMs();
            text += left ? tr(" · about %1 left").arg(elapsedClock(*left)) : tr(" · time left: after the first task");
            if (m_session->requestsInFlight() > 0)
                text += tr(" · %1 in flight")
                            .arg(counted(m_session->requestsInFlight(), tr("model request"), tr("model requests")));
        }
        m_progressText->setText(text);
        return;
    }
    if (m_openedStore) {
        const int done = m_model->taskCount();
        const int total = qMax(m_openedTotal, done);
        m_progress->setRange(0, qMax(1, total));
        m_progress->setValue(done);
        m_progressText->setText(tr("%1/%2 tasks have candidates · %3").arg(done).arg(total).arg(m_openedInfo.status));
    }
}

void RunMonitorPage::addProblem(const RunProblem& problem)
{
    auto* item = new QTreeWidgetItem(
        m_problems, {problem.time.toString(QStringLiteral("HH:mm:ss")), problem.task, problem.source, problem.message});
    item->setToolTip(3, problem.message);
    item->setForeground(3, problem.error ? QColor(0xb0, 0x1e, 0x1e) : QColor(0xb3, 0x5c, 0x00));
    item->setData(0, Qt::UserRole, problem.error);
    m_problems->scrollToItem(item);
    int errors = 0;
    for (int i = 0; i < m_problems->topLevelItemCount(); ++i)
        errors += m_problems->topLevelItem(i)->data(0, Qt::UserRole).toBool() ? 1 : 0;
    const int warnings = m_problems->topLevelItemCount() - errors;
    m_problemsTitle->setText(
        tr("Problems: %1, %2")
            .arg(counted(errors, tr("error"), tr("errors")), counted(warnings, tr("warning"), tr("warnings"))));
}

int RunMonitorPage::problemCount() const
{
    return m_problems->topLevelItemCount();
}

bool RunMonitorPage::openRun(const QString& databasePath, qint64 runId, QString* error)
{
    clear();
    auto store = std::make_unique<RunStore>();
    const auto failWith = [&](const QString& message) {
        m_empty->setText(tr("Cannot open run %1 of %2: %3").arg(runId).arg(databasePath, message));
        if (error)
            *error = message;
        return false;
    };
    if (!QFileInfo(databasePath).isFile())
        return failWith(tr("no such file"));
    if (!store->open(databasePath))
        return failWith(store->errorString());
    const std::optional<RunInfo> info = store->run(runId);
    if (!info)
        return failWith(tr("no such run"));
    m_openedStore = std::move(store);
    m_openedPath = databasePath;
    m_openedRunId = runId;
    m_openedInfo = *info;
    m_openedTotal = int(info->config.tasks.size());
    m_model->setLive(false);
    m_model->load(*m_openedStore, runId);
    loadStoredProblems(*m_openedStore, runId);
    m_stack->setCurrentIndex(1);
    updateHeader();
    updateProgress();
    return true;
}

bool RunMonitorPage::followRun(const QString& databasePath, qint64 runId, QString* error)
{
    const auto sameFile = [](const QString& a, const QString& b) {
        return QFileInfo(a).absoluteFilePath() == QFileInfo(b).absoluteFilePath();
    };
    RunSession* live = m_manager ? m_manager->current() : nullptr;
    if (live && live->runId() == runId && sameFile(live->environment().databasePath, databasePath)) {
        if (m_session != live)
            setSession(live);
        return true;
    }
    if (!m_session && m_openedStore && m_openedRunId == runId && sameFile(m_openedPath, databasePath))
        return true;
    return openRun(databasePath, runId, error);
}

void RunMonitorPage::loadStoredProblems(const RunStore& store, qint64 runId)
{
    for (const UnitResponse& r : store.responses(runId)) {
        if (r.response.error.isEmpty())
            continue;
        addProblem(RunProblem{r.created.toLocalTime(), true, r.unit.task, QStringLiteral("model"),
                              tr("turn %1 %2: %3").arg(r.unit.turn).arg(r.unit.role, r.response.error)});
    }
    const std::optional<RunInfo> info = store.run(runId);
    const bool compileOnly = info && info->config.compileOnly;
    for (const EvaluationRecord& e : store.evaluations(runId)) {
        if (!isRunProblem(e, compileOnly))
            continue;
        addProblem(RunProblem{
            e.created.toLocalTime(), true, e.task, QStringLiteral("evaluation"),
            tr("turn %1 sample %2: %3: %4").arg(e.turn).arg(e.sample).arg(e.status, e.evaluation().message)});
    }
}

void RunMonitorPage::selectUnit(const UnitKey& unit)
{
    const QModelIndex index = m_model->indexOf(unit);
    if (!index.isValid())
        return;
    m_tree->expand(index.parent());
    m_tree->setCurrentIndex(index);
    m_tree->scrollTo(index);
}

void RunMonitorPage::setFollowLive(bool follow)
{
    m_follow->setChecked(follow);
}

std::optional<UnitKey> RunMonitorPage::currentUnit() const
{
    return m_model->unitKey(m_tree->currentIndex());
}

void RunMonitorPage::showDetails()
{
    const QModelIndex index = m_tree->currentIndex();
    const RunTreeUnit* unit = m_model->unit(index);
    if (!unit) {
        m_text->clear();
        m_compileLog->clear();
        m_evaluation->clear();
        m_prompts->clear();
        m_promptsShown.clear();
        if (index.isValid())
            m_unitHeader->setText(
                tr("<b>%1</b>: %2. Select a sample to see its text.")
                    .arg(index.data(RunTreeModel::TaskRole).toString(),
                         m_model->index(index.row(), RunTreeModel::StatusColumn, index.parent()).data().toString()));
        return;
    }
    const QString status = m_model->index(index.row(), RunTreeModel::StatusColumn, index.parent()).data().toString();
    QString header = tr("<b>%1</b> · turn %2 · %3 · sample %4 · <b>%5</b>")
                         .arg(index.data(RunTreeModel::TaskRole).toString())
                         .arg(index.data(RunTreeModel::TurnRole).toInt())
                         .arg(unit->role)
                         .arg(unit->sample)
                         .arg(status.toHtmlEscaped());
    if (unit->speedup)
        header += tr(" · speedup %1").arg(formatSpeedup(*unit->speedup, unit->speedupInterval).toHtmlEscaped());
    if (unit->evaluated())
        for (const QString& reason : notCountedReasons(unit->evaluation))
            header += QStringLiteral("<br><span style=\"color:#b01e1e\">%1</span>").arg(reason.toHtmlEscaped());
    const QString message = index.data(RunTreeModel::MessageRole).toString();
    if (!message.isEmpty())
        header += QStringLiteral("<br>") + message.toHtmlEscaped();
    m_unitHeader->setText(header);

    // Keep the reader's place in a long answer unless they were at the end.
    QScrollBar* bar = m_text->verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 2;
    const int position = bar->value();
    if (m_text->toPlainText() != unit->text) {
        m_text->setPlainText(unit->text);
        bar->setValue(atEnd ? bar->maximum() : position);
    }
    const QString log = index.data(RunTreeModel::CompileLogRole).toString();
    m_compileLog->setPlainText(
        log.isEmpty() ? (!unit->evaluated() ? tr("(not evaluated yet)") : tr("(the compiler said nothing)")) : log);
    if (!unit->evaluated())
        m_evaluation->setPlainText(QString());
    else if (m_rawJson->isChecked()) // the response as the worker wrote it, for the reader who asks
        m_evaluation->setPlainText(
            QString::fromUtf8(QJsonDocument(unit->evaluation.raw).toJson(QJsonDocument::Indented)));
    else
        m_evaluation->setPlainText(evaluationSummary(unit->evaluation));
    showPromptsSent(index.data(RunTreeModel::TaskRole).toString(), index.data(RunTreeModel::TurnRole).toInt(),
                    unit->sample);
}

void RunMonitorPage::showPromptsSent(const QString& task, int turn, int sample)
{
    const RunStore* store = m_session ? &m_session->store() : m_openedStore.get();
    const qint64 runId = m_session ? m_session->runId() : m_openedRunId;
    // Read once per unit shown (a streaming unit calls showDetails on every chunk), again when a
    // live run may have stored more of the unit's prompts.
    const QString key = QStringLiteral("%1/%2/%3/%4").arg(runId).arg(task).arg(turn).arg(sample);
    if (key == m_promptsShown && !m_session)
        return;
    m_promptsShown = key;
    const QString text = store && runId > 0 ? promptsText(promptsSentFor(store->prompts(runId, task), turn, sample))
                                            : tr("(no run store)");
    if (m_prompts->toPlainText() != text)
        m_prompts->setPlainText(text);
}

QString RunMonitorPage::promptsSentText() const
{
    return m_prompts->toPlainText();
}

void RunMonitorPage::onStreamed(const UnitKey& unit, const QString& chunk)
{
    m_model->appendStreamedText(unit, chunk);
    if (currentUnit() != unit)
        return;
    QScrollBar* bar = m_text->verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 2;
    QTextCursor cursor(m_text->document());
    cursor.movePosition(QTextCursor::End);
    cursor.insertText(chunk);
    if (atEnd)
        bar->setValue(bar->maximum());
}

} // namespace kwb::app

#include "app/runs/launchpage.h"

#include "app/runs/reporttables.h"
#include "app/runs/runmanager.h"
#include "core/model/llmclient.h"
#include "core/model/secrets.h"
#include "core/protocol/defaults.h"
#include "core/protocol/protocollimits.h"
#include "core/protocol/workerresponses.h"
#include "core/run/regimefile.h"
#include "core/study/report.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workertarget.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMap>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

namespace kwb::app {

namespace {

/// QSettings key of the launch database the user chose.
const QString kLaunchDatabaseKey = QStringLiteral("launch/database");

constexpr int kLevels = 3;

QList<QPair<QString, QString>> defaultCatalog()
{
    // Before the worker lists its tasks: the default set's (the study's 30).
    QList<QPair<QString, QString>> tasks;
    QString error;
    for (const TaskSetInfo& set : taskSets())
        if (set.name == defaultTaskSet())
            for (const QString& id : parseTaskSpec(set.spec, &error))
                tasks.append({id, QString()});
    return tasks;
}

QComboBox* regimeCombo(QWidget* parent, const QString& name)
{
    auto* combo = new QComboBox(parent);
    combo->setObjectName(name);
    for (const RegimeEntry& entry : regimeCatalog().entries) { // the built-ins, then the user's (regimefile.h)
        combo->addItem(entry.regime.name, entry.regime.name);
        combo->setItemData(combo->count() - 1, entry.regime.description, Qt::ToolTipRole);
    }
    return combo;
}

QString regimeSummary(const Regime& r)
{
    QStringList parts;
    parts << QObject::tr("n = %1").arg(r.n) << counted(r.turns, QObject::tr("turn"), QObject::tr("turns"));
    parts << (r.temperature ? QObject::tr("T = %1").arg(*r.temperature) : QObject::tr("server's temperature"));
    parts << QObject::tr("feedback: %1").arg(toString(r.feedback));
    parts << QObject::tr("selection: %1").arg(toString(r.selection));
    parts << (r.stopWhenCorrect ? QObject::tr("stops at a correct candidate")
                                : QObject::tr("goes on after a correct candidate"));
    if (r.useProfile)
        parts << QObject::tr("profile in the prompt");
    if (!r.ablated.isEmpty())
        parts << QObject::tr("off: %1").arg(r.ablated.join(QStringLiteral(", ")));
    return parts.join(QStringLiteral(" · "));
}

/// A profile's tolerances and switches, from the worker's settings ("atol 1e-4, rtol 1e-4, L2
/// flush, TF32 off").
QString profileSummary(const ProfileSettings& p)
{
    QStringList parts;
    if (p.atol)
        parts << QStringLiteral("atol %1").arg(*p.atol, 0, 'g', 3);
    if (p.rtol)
        parts << QStringLiteral("rtol %1").arg(*p.rtol, 0, 'g', 3);
    if (p.l2Flush)
        parts << (*p.l2Flush ? QObject::tr("L2 flush") : QObject::tr("no L2 flush"));
    if (p.tf32)
        parts << (*p.tf32 ? QObject::tr("TF32 on") : QObject::tr("TF32 off"));
    if (p.timingTrials)
        parts << QObject::tr("%1 timing trials").arg(*p.timingTrials);
    return parts.join(QStringLiteral(", "));
}

} // namespace

namespace {

/// A check box of the form, with its name for tests and its tooltip.
QCheckBox* checkBox(QWidget* parent, const QString& text, const QString& objectName, const QString& toolTip)
{
    auto* box = new QCheckBox(text, parent);
    box->setObjectName(objectName);
    box->setToolTip(toolTip);
    return box;
}

/// A line under a field saying what is wrong with it: hidden until there is something to say,
/// wrapped so that no text widens the window.
QLabel* problemLabel(QWidget* parent, const QString& objectName, const QString& colour)
{
    auto* label = new QLabel(parent);
    label->setObjectName(objectName);
    label->setWordWrap(true);
    label->setStyleSheet(QStringLiteral("color: %1;").arg(colour));
    label->setVisible(false);
    return label;
}

} // namespace

LaunchPage::LaunchPage(RunManager* manager, QWidget* parent)
    : QWidget(parent)
    , m_manager(manager)
    , m_promptsDir(defaultPromptsDir())
{
    m_probe = new LlmClient(this);
    connect(m_probe, &LlmClient::modelsAvailable, this, [this](const QStringList& models) {
        m_probing = false;
        m_test->setEnabled(true);
        const QString current = m_model->currentText();
        m_model->clear();
        m_model->addItems(models);
        m_model->setCurrentText(models.contains(current) || models.isEmpty() ? current : models.first());
        m_connectionStatus = models.isEmpty()
                                 ? tr("Connected; the server lists no models")
                                 : tr("Connected: %1").arg(counted(models.size(), tr("model"), tr("models")));
        m_connection->setText(m_connectionStatus);
        m_connection->setToolTip(models.join(QLatin1Char('\n')));
        m_connection->setStyleSheet(QStringLiteral("color: #1b7f3b;"));
        Q_EMIT connectionTested(true);
    });
    connect(m_probe, &LlmClient::modelsFailed, this, [this](const QString& message) {
        m_probing = false;
        m_test->setEnabled(true);
        m_connectionStatus = tr("Failed: %1").arg(message);
        m_connection->setText(m_connectionStatus);
        m_connection->setToolTip(message);
        m_connection->setStyleSheet(QStringLiteral("color: #b01e1e;"));
        Q_EMIT connectionTested(false);
    });

    buildUi();
    fillTaskTree(defaultCatalog());
    setRegime(QStringLiteral("agent"));
    // The user's last choice, else a file of its own: never the open study database (runlaunch.h).
    m_database->setText(QSettings().value(kLaunchDatabaseKey, defaultLaunchDatabase()).toString());
    m_database->setToolTip(tr("Where launched runs are written. The Results page offers to open it when it is not "
                              "the database shown there."));
    connect(m_database, &QLineEdit::editingFinished, this, [this] { setDatabasePath(databasePath()); });
    checkDatabase();
    if (!secrets::environmentApiKey().isEmpty())
        m_apiKey->setPlaceholderText(tr("from $KWB_API_KEY"));

    connect(m_manager, &RunManager::sessionStarted, this, [this](RunSession* session) {
        connect(session, &RunSession::progressChanged, this, &LaunchPage::updateRunControls);
        connect(session, &RunSession::preparing, this, &LaunchPage::updateRunControls);
        updateRunControls();
    });
    connect(m_manager, &RunManager::currentStateChanged, this, &LaunchPage::updateRunControls);
    connect(m_manager, &RunManager::queueChanged, this, &LaunchPage::updateQueueList);
    updateRunControls();
    updateQueueList();
    updateRegimeSummary();
}

LaunchPage::~LaunchPage() = default;

void LaunchPage::buildUi()
{
    // In a scroll area: the form is taller than a 1280×720 screen leaves, and the page's minimum
    // height would otherwise be the whole window's.
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("launchScroll"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* content = new QWidget(scroll);
    auto* layout = new QHBoxLayout(content);
    scroll->setWidget(content);
    outer->addWidget(scroll);
    layout->addWidget(buildTasksBox(), 2);
    layout->addWidget(buildRegimeBox(), 3);
    auto* right = new QVBoxLayout;
    right->addWidget(buildServerBox());
    right->addWidget(buildEvaluationBox());
    right->addWidget(buildControlBox(), 1);
    layout->addLayout(right, 3);
}

QWidget* LaunchPage::buildTasksBox()
{
    auto* box = new QGroupBox(tr("Tasks"), this);
    auto* layout = new QVBoxLayout(box);
    m_allTasks = new QCheckBox(tr("All tasks"), box);
    m_allTasks->setObjectName(QStringLiteral("allTasks"));
    m_allTasks->setTristate(true);
    connect(m_allTasks, &QCheckBox::clicked, this, [this] {
        // A click on a partly checked box checks everything.
        const Qt::CheckState state = m_allTasks->checkState() == Qt::Unchecked ? Qt::Unchecked : Qt::Checked;
        const QSignalBlocker blocker(m_tasks);
        for (int i = 0; i < m_tasks->topLevelItemCount(); ++i) {
            QTreeWidgetItem* level = m_tasks->topLevelItem(i);
            for (int j = 0; j < level->childCount(); ++j)
                level->child(j)->setCheckState(0, state);
            level->setCheckState(0, state);
        }
        updateTaskSummary();
    });
    layout->addWidget(m_allTasks);
    // The named sets (issue 37): choosing one checks its tasks; the combo names the set the checks
    // make, else "Custom" (updateTaskSummary), and a run of a set records the set's name.
    m_taskSet = new QComboBox(box);
    m_taskSet->setObjectName(QStringLiteral("taskSet"));
    m_taskSet->addItem(tr("Custom"), QString());
    for (const TaskSetInfo& set : taskSets())
        m_taskSet->addItem(QStringLiteral("%1: %2").arg(set.name, set.description), set.name);
    m_taskSet->setToolTip(tr("Check the tasks of a set: study is the study's 30 (KernelBench's first ten of each "
                             "level); KernelBench-only tasks are left out of a run, with the reason"));
    connect(m_taskSet, &QComboBox::activated, this, [this](int index) {
        const QString name = m_taskSet->itemData(index).toString();
        if (!name.isEmpty())
            selectTaskSet(name);
    });
    layout->addWidget(m_taskSet);
    m_tasks = new QTreeWidget(box);
    m_tasks->setObjectName(QStringLiteral("taskTree"));
    m_tasks->setHeaderLabels({tr("Task"), tr("Title")});
    m_tasks->setRootIsDecorated(true);
    m_tasks->setUniformRowHeights(true);
    m_tasks->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    connect(m_tasks, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem*, int column) {
        if (column == 0)
            updateTaskSummary();
    });
    layout->addWidget(m_tasks, 1);
    m_taskSummary = new QLabel(box);
    m_taskSummary->setObjectName(QStringLiteral("taskSummary"));
    m_taskSummary->setWordWrap(true);
    layout->addWidget(m_taskSummary);
    return box;
}

QWidget* LaunchPage::buildRegimeBox()
{
    auto* box = new QGroupBox(tr("Regime"), this);
    auto* layout = new QVBoxLayout(box);
    auto* group = new QButtonGroup(box);
    m_single = new QRadioButton(tr("One regime for every task"), box);
    m_single->setObjectName(QStringLiteral("singleRegime"));
    m_routed = new QRadioButton(tr("A regime per level (routing)"), box);
    m_routed->setObjectName(QStringLiteral("routedRegime"));
    group->addButton(m_single);
    group->addButton(m_routed);
    m_single->setChecked(true);

    layout->addWidget(m_single);
    m_regime = regimeCombo(box, QStringLiteral("regimeCombo"));
    layout->addWidget(m_regime);
    m_regimeDescription = new QLabel(box);
    m_regimeDescription->setObjectName(QStringLiteral("regimeDescription"));
    m_regimeDescription->setWordWrap(true);
    // Body text on the window's colours: the dimmed grey it had was hard to read.
    m_regimeDescription->setFrameShape(QFrame::StyledPanel);
    m_regimeDescription->setMargin(6);
    layout->addWidget(m_regimeDescription);

    layout->addWidget(m_routed);
    auto* routing = new QFormLayout;
    for (int level = 1; level <= kLevels; ++level) {
        QComboBox* combo = regimeCombo(box, QStringLiteral("routingL%1").arg(level));
        m_levelRegimes.append(combo);
        routing->addRow(tr("Level %1").arg(level), combo);
        connect(combo, &QComboBox::currentIndexChanged, this, &LaunchPage::updateRegimeSummary);
    }
    m_fallback = regimeCombo(box, QStringLiteral("routingFallback"));
    routing->addRow(tr("Other levels"), m_fallback);
    connect(m_fallback, &QComboBox::currentIndexChanged, this, &LaunchPage::updateRegimeSummary);
    auto* study = new QPushButton(tr("The study's routing (L1, L3 profiling-guided; L2 agent)"), box);
    study->setObjectName(QStringLiteral("studyRouting"));
    connect(study, &QPushButton::clicked, this, [this] { setRouting(Routing::studyEstimate()); });
    routing->addRow(study);
    layout->addLayout(routing);

    auto* ablations = new QGroupBox(tr("Ablations: switch a part off"), box);
    auto* ablationLayout = new QVBoxLayout(ablations);
    m_offBestOfN = new QCheckBox(tr("Best-of-n off (n = 1)"), ablations);
    m_offBestOfN->setObjectName(QStringLiteral("ablateBestOfN"));
    m_offFeedbackAnalyzer = new QCheckBox(tr("Feedback analyzer off (the raw log goes back)"), ablations);
    m_offFeedbackAnalyzer->setObjectName(QStringLiteral("ablateFeedbackAnalyzer"));
    m_offMonotone = new QCheckBox(tr("Monotone selection off (the last turn wins)"), ablations);
    m_offMonotone->setObjectName(QStringLiteral("ablateMonotone"));
    m_offCompetence = new QCheckBox(tr("Competence-matched prompts off (no guidance, no load_inline pin)"), ablations);
    m_offCompetence->setObjectName(QStringLiteral("ablateCompetence"));
    for (QCheckBox* check : {m_offBestOfN, m_offFeedbackAnalyzer, m_offMonotone, m_offCompetence}) {
        ablationLayout->addWidget(check);
        connect(check, &QCheckBox::toggled, this, &LaunchPage::updateRegimeSummary);
    }
    layout->addWidget(ablations);

    auto* overrides = new QFormLayout;
    m_n = new QSpinBox(box);
    m_n->setObjectName(QStringLiteral("nSpin"));
    // The bounds a regime file is checked against (regimefile.h), so the page offers what a regime may say.
    m_n->setRange(0, kRegimeMaxN);
    m_n->setSpecialValueText(tr("the regime's"));
    m_turns = new QSpinBox(box);
    m_turns->setObjectName(QStringLiteral("turnsSpin"));
    m_turns->setRange(0, kRegimeMaxTurns);
    m_turns->setSpecialValueText(tr("the regime's"));
    m_temperature = new QDoubleSpinBox(box);
    m_temperature->setObjectName(QStringLiteral("temperatureSpin"));
    m_temperature->setRange(-0.1, kRegimeMaxTemperature);
    m_temperature->setSingleStep(0.1);
    m_temperature->setDecimals(2);
    m_temperature->setValue(-0.1);
    m_temperature->setSpecialValueText(tr("the regime's"));
    overrides->addRow(tr("Candidates per turn (n)"), m_n);
    overrides->addRow(tr("Turns"), m_turns);
    overrides->addRow(tr("Temperature"), m_temperature);
    // The template set the run renders: the study set (the default) or the workbench's earlier
    // wording (docs/prompts.md); another directory set with setPromptsDir() appears as its path.
    m_promptSet = new QComboBox(box);
    m_promptSet->setObjectName(QStringLiteral("promptSetCombo"));
    for (const QString& name : shippedPromptSetNames())
        m_promptSet->addItem(name == QLatin1String("study") ? tr("study (the paper's regimes)") : name,
                             shippedPromptSetDir(name));
    connect(m_promptSet, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0)
            m_promptsDir = m_promptSet->itemData(index).toString();
    });
    overrides->addRow(tr("Prompt set"), m_promptSet);
    // Stored with the regime (stop_when_correct), as `kwb run --[no-]stop-when-correct`.
    m_stopWhenCorrect = new QComboBox(box);
    m_stopWhenCorrect->setObjectName(QStringLiteral("stopWhenCorrectCombo"));
    m_stopWhenCorrect->addItem(tr("the regime's"), -1);
    m_stopWhenCorrect->addItem(tr("stop at the first correct candidate"), 1);
    m_stopWhenCorrect->addItem(tr("go on for speed (monotone keeps the correct one)"), 0);
    overrides->addRow(tr("After a correct candidate"), m_stopWhenCorrect);
    layout->addLayout(overrides);
    connect(m_stopWhenCorrect, &QComboBox::currentIndexChanged, this, &LaunchPage::updateRegimeSummary);
    connect(m_n, &QSpinBox::valueChanged, this, &LaunchPage::updateRegimeSummary);
    connect(m_turns, &QSpinBox::valueChanged, this, &LaunchPage::updateRegimeSummary);
    connect(m_temperature, &QDoubleSpinBox::valueChanged, this, &LaunchPage::updateRegimeSummary);

    m_effective = new QLabel(box);
    m_effective->setObjectName(QStringLiteral("effectiveRegime"));
    m_effective->setWordWrap(true);
    m_effective->setTextFormat(Qt::RichText);
    layout->addWidget(m_effective);
    layout->addStretch(1);

    connect(m_regime, &QComboBox::currentIndexChanged, this, &LaunchPage::updateRegimeSummary);
    connect(m_single, &QRadioButton::toggled, this, &LaunchPage::updateRegimeSummary);
    return box;
}

void LaunchPage::setPromptsDir(const QString& dir)
{
    m_promptsDir = dir;
    const QString wanted = QDir(dir).absolutePath();
    for (int i = 0; i < m_promptSet->count(); ++i)
        if (QDir(m_promptSet->itemData(i).toString()).absolutePath() == wanted) {
            const QSignalBlocker block(m_promptSet);
            m_promptSet->setCurrentIndex(i);
            return;
        }
    const QSignalBlocker block(m_promptSet);
    m_promptSet->addItem(dir, dir);
    m_promptSet->setCurrentIndex(m_promptSet->count() - 1);
}

void LaunchPage::setWorkerProfiles(const HelloInfo& hello)
{
    if (hello.profiles.isEmpty())
        return; // a worker that does not announce its profiles: keep the known names
    const QString current = m_profile->currentText();
    m_profile->clear();
    for (const ProfileSettings& p : hello.profiles) {
        m_profile->addItem(p.name);
        m_profile->setItemData(m_profile->count() - 1, profileSummary(p), Qt::ToolTipRole);
    }
    const QString wanted = m_profile->findText(current) >= 0 ? current
                           : hello.defaultProfile.isEmpty()  ? defaults::profile()
                                                             : hello.defaultProfile;
    m_profile->setCurrentIndex(qMax(0, m_profile->findText(wanted)));
}

QWidget* LaunchPage::buildServerBox()
{
    auto* box = new QGroupBox(tr("Model server (OpenAI-compatible)"), this);
    auto* form = new QFormLayout(box);
    m_endpoint = new QLineEdit(defaults::endpoint(), box);
    m_endpoint->setObjectName(QStringLiteral("endpointEdit"));
    m_apiKey = new QLineEdit(box);
    m_apiKey->setObjectName(QStringLiteral("apiKeyEdit"));
    m_apiKey->setEchoMode(QLineEdit::Password);
    m_apiKey->setToolTip(tr("Sent as a bearer token; never stored in the run database"));
    m_model = new QComboBox(box);
    m_model->setObjectName(QStringLiteral("modelCombo"));
    m_model->setEditable(true);
    m_model->setToolTip(tr("Empty: the server's only model (llama.cpp serves one and needs no name)"));
    m_test = new QPushButton(tr("Test connection"), box);
    m_test->setObjectName(QStringLiteral("testConnection"));
    connect(m_test, &QPushButton::clicked, this, &LaunchPage::testConnection);
    m_connection = new QLabel(box);
    m_connection->setObjectName(QStringLiteral("connectionStatus"));
    m_connection->setWordWrap(true);
    m_stream = new QCheckBox(tr("Stream answers (the monitor shows text as it arrives)"), box);
    m_stream->setObjectName(QStringLiteral("streamCheck"));
    m_stream->setChecked(true);
    m_modelTimeout = new QDoubleSpinBox(box);
    m_modelTimeout->setObjectName(QStringLiteral("modelTimeoutSpin"));
    m_modelTimeout->setRange(1, 86400);
    m_modelTimeout->setDecimals(0);
    m_modelTimeout->setSuffix(tr(" s"));
    m_modelTimeout->setValue(defaultModelTimeoutS());
    m_modelTimeout->setToolTip(tr("A model request's total time, retries included: a silent or trickling "
                                  "server fails the request as a time-out after this"));
    m_contextTokens = new QSpinBox(box);
    m_contextTokens->setObjectName(QStringLiteral("contextTokensSpin"));
    m_contextTokens->setRange(0, 1 << 24);
    m_contextTokens->setSingleStep(1024);
    m_contextTokens->setValue(defaults::kContextTokens);
    m_contextTokens->setSpecialValueText(tr("no check"));
    m_contextTokens->setToolTip(tr("The model's context length: every prompt of the run, plus %1 max output tokens, "
                                   "must fit; checked before any model request (docs/prompts.md)")
                                    .arg(defaults::kMaxOutputTokens));
    auto* testRow = new QHBoxLayout;
    testRow->addWidget(m_test);
    testRow->addWidget(m_connection, 1);
    form->addRow(tr("Endpoint"), m_endpoint);
    form->addRow(tr("API key"), m_apiKey);
    form->addRow(tr("Model"), m_model);
    form->addRow(tr("Model time-out"), m_modelTimeout);
    form->addRow(tr("Context tokens"), m_contextTokens);
    form->addRow(testRow);
    form->addRow(m_stream);
    return box;
}

QWidget* LaunchPage::buildEvaluationBox()
{
    auto* box = new QGroupBox(tr("Evaluation and storage"), this);
    auto* form = new QFormLayout(box);
    m_profile = new QComboBox(box);
    m_profile->setObjectName(QStringLiteral("profileCombo"));
    // Until a worker has answered hello, the profiles this client knows by name; setWorkerProfiles()
    // replaces them with the worker's own table.
    for (const char* name : defaults::kKnownProfiles)
        m_profile->addItem(QString::fromLatin1(name));
    m_profile->setCurrentText(defaults::profile());
    m_scale = new QComboBox(box);
    m_scale->setObjectName(QStringLiteral("scaleCombo"));
    m_scale->addItem(QStringLiteral("full"));
    m_scale->addItem(QStringLiteral("smoke"));
    m_timeout = new QDoubleSpinBox(box);
    m_timeout->setObjectName(QStringLiteral("timeoutSpin"));
    m_timeout->setRange(1, 3600);
    m_timeout->setDecimals(0);
    m_timeout->setSuffix(tr(" s"));
    m_timeout->setValue(defaults::kEvaluationTimeoutS);
    m_timingTrials = new QSpinBox(box);
    m_timingTrials->setObjectName(QStringLiteral("timingTrialsSpin"));
    m_timingTrials->setRange(0, TrialLimits::Timing.max); // 0: the profile's
    m_timingTrials->setSpecialValueText(tr("the profile's"));
    m_isolation = new QComboBox(box);
    m_isolation->setObjectName(QStringLiteral("isolationCombo"));
    m_isolation->addItem(tr("A fresh worker per candidate"), QStringLiteral("fresh"));
    m_isolation->addItem(tr("Reuse a healthy worker (faster, less isolated)"), QStringLiteral("reuse"));
    // What a worker may take of the host; over it an evaluation ends as resource_limit.
    m_maxHostMemory = new QDoubleSpinBox(box);
    m_maxHostMemory->setObjectName(QStringLiteral("maxHostMemorySpin"));
    m_maxHostMemory->setDecimals(1);
    m_maxHostMemory->setSingleStep(1);
    m_maxHostMemory->setRange(0, std::max(1.0, double(machineMemoryBytes()) / double(qint64(1) << 30)));
    m_maxHostMemory->setSuffix(tr(" GiB"));
    m_maxHostMemory->setSpecialValueText(tr("the default (%1)").arg(formatBytes(defaultHostMemoryLimit())));
    m_maxHostMemory->setToolTip(tr("Host memory a worker may take (the worker and everything under it); 0: half the "
                                   "machine's memory, at most all but 4 GiB"));
    m_osSandbox = new QCheckBox(tr("No network, read-only files (bubblewrap)"), box);
    m_osSandbox->setObjectName(QStringLiteral("osSandboxCheck"));
    m_osSandbox->setChecked(true);
    {
        const QString sandbox = workerSandboxStatus(WorkerLimits());
        m_osSandbox->setToolTip(sandbox == kSandboxBubblewrap
                                    ? tr("Workers run in bubblewrap's sandbox")
                                    : tr("Not available here: workers run without it (%1)").arg(sandbox));
    }
    m_database = new QLineEdit(box);
    m_database->setObjectName(QStringLiteral("databaseEdit"));
    auto* browse = new QPushButton(tr("Browse…"), box);
    connect(browse, &QPushButton::clicked, this, &LaunchPage::chooseDatabase);
    auto* dbRow = new QHBoxLayout;
    dbRow->addWidget(m_database, 1);
    dbRow->addWidget(browse);
    form->addRow(tr("Protocol profile"), m_profile);
    form->addRow(tr("Scale"), m_scale);
    form->addRow(tr("Evaluation time-out"), m_timeout);
    form->addRow(tr("Timing trials"), m_timingTrials);
    form->addRow(tr("Worker isolation"), m_isolation);
    form->addRow(tr("Host memory limit"), m_maxHostMemory);
    form->addRow(tr("OS sandbox"), m_osSandbox);
    m_workers = new QLineEdit(box); // issue 16: where the workers run (docs/remote-workers.md)
    m_workers->setObjectName(QStringLiteral("workersEdit"));
    m_workers->setPlaceholderText(tr("local (or ssh:gpu-box:0,1, slurm:partition=a100,gpus=4)"));
    m_workers->setToolTip(tr("Where the run evaluates: local GPUs, GPUs of an SSH host (your own ssh config and keys), "
                             "or a Slurm partition; several joined by ';'. Empty: this machine's GPU 0."));
    form->addRow(tr("Workers"), m_workers);
    m_compileOnly = new QCheckBox(tr("Compile only: no GPU, correctness not measured"), box);
    m_compileOnly->setObjectName(QStringLiteral("compileOnlyCheck"));
    m_compileOnly->setToolTip(tr("Evaluate with device \"none\": compile and sandbox check only. Without it a run "
                                 "does not start on a machine without a GPU."));
    form->addRow(m_compileOnly);
    m_answerFormat = new QComboBox(box);
    m_answerFormat->setObjectName(QStringLiteral("answerFormatCombo"));
    m_answerFormat->addItem(tr("Native: a cuda and a python block (the workbench's own, faster)"),
                            QString::fromLatin1(defaults::kAnswerFormatNative));
    m_answerFormat->addItem(tr("KernelBench: class ModelNew with load_inline (the study's preset)"),
                            QString::fromLatin1(defaults::kAnswerFormatKernelBench));
    m_answerFormat->setToolTip(tr("What the prompts ask for and every evaluation expects. KernelBench's format is "
                                  "the study's preset: KernelBench's prompt structure (its problem file, a one-shot "
                                  "example), the load_inline pin only in the repaired agent's prompts; its answers "
                                  "build with nvcc in tens of seconds. The native format is the workbench's own: "
                                  "NVRTC compiles it in about a second. The KernelBench format takes the "
                                  "prompts-kernelbench set unless another set is chosen."));
    form->addRow(tr("Answer format"), m_answerFormat);
    m_compileWorkers = new QSpinBox(box); // issue 14: the CPU compile pool
    m_compileWorkers->setObjectName(QStringLiteral("compileWorkersSpin"));
    m_compileWorkers->setRange(RunEnvironment::kAutomatic, 256);
    m_compileWorkers->setSpecialValueText(tr("automatic"));
    m_compileWorkers->setValue(RunEnvironment::kAutomatic);
    m_compileWorkers->setToolTip(
        tr("CPU workers compiling candidates ahead of the GPU (0: none). Automatic: 1 for "
           "native answers, %1 here for KernelBench's (3/4 of the cores, at most one per 6 GiB "
           "of 3/4 of the memory: its builds take a minute and about 4 GB each). Stored with the run.")
            .arg(defaultCompileWorkers(QString::fromLatin1(defaults::kAnswerFormatKernelBench))));
    form->addRow(tr("Compile workers"), m_compileWorkers);
    // A number chosen over what the memory holds for KernelBench-format builds (the CLI's warning).
    m_compileWorkersWarning = problemLabel(box, QStringLiteral("compileWorkersWarning"), QStringLiteral("#9a6700"));
    form->addRow(QString(), m_compileWorkersWarning);
    const auto checkCompileWorkers = [this] {
        const int n = m_compileWorkers->value();
        const QString warning = n == RunEnvironment::kAutomatic
                                    ? QString()
                                    : compileWorkersMemoryWarning(m_answerFormat->currentData().toString(), n);
        m_compileWorkersWarning->setText(warning);
        m_compileWorkersWarning->setVisible(!warning.isEmpty());
    };
    connect(m_compileWorkers, &QSpinBox::valueChanged, this, checkCompileWorkers);
    connect(m_answerFormat, &QComboBox::currentIndexChanged, this, checkCompileWorkers);
    // Its minimum, 0, reads "automatic" (no slot count is 0): defaultEvaluationsPerGpu for the format.
    m_evaluationsPerGpu = new QSpinBox(box);
    m_evaluationsPerGpu->setObjectName(QStringLiteral("evaluationsPerGpuSpin"));
    m_evaluationsPerGpu->setRange(0, EvaluationQueue::kMaxEvaluationsPerGpu);
    m_evaluationsPerGpu->setSpecialValueText(tr("automatic"));
    m_evaluationsPerGpu->setValue(0);
    m_evaluationsPerGpu->setToolTip(
        tr("Candidates evaluated at once on each local GPU (a remote worker has one). Automatic: %1 for native "
           "answers, %2 for KernelBench's, whose answers' models are built on the CPU while the other "
           "answer uses the GPU. Timings still run one at a time under the GPU's quiet lock; a candidate "
           "that ran out of GPU memory or time beside another is evaluated again alone. Stored with the run.")
            .arg(defaultEvaluationsPerGpu(QString::fromLatin1(defaults::kAnswerFormatNative)))
            .arg(defaultEvaluationsPerGpu(QString::fromLatin1(defaults::kAnswerFormatKernelBench))));
    form->addRow(tr("Evaluations per GPU"), m_evaluationsPerGpu);
    m_pauseGeneration = new QCheckBox(tr("Pause generation while a candidate is timed"), box);
    m_pauseGeneration->setObjectName(QStringLiteral("pauseGenerationCheck"));
    m_pauseGeneration->setToolTip(tr("No new model request while an evaluation holds the GPU (requests already "
                                     "sent go on). On by default for a model server on this machine, which may "
                                     "share the GPU. Recorded with each evaluation."));
    m_pauseGeneration->setChecked(isLocalEndpoint(m_endpoint->text().trimmed()));
    connect(m_pauseGeneration, &QCheckBox::clicked, this, [this] { m_pauseGenerationTouched = true; });
    connect(m_endpoint, &QLineEdit::textChanged, this, [this](const QString& text) {
        if (!m_pauseGenerationTouched)
            m_pauseGeneration->setChecked(isLocalEndpoint(text.trimmed()));
    });
    form->addRow(m_pauseGeneration);
    m_evaluateIdenticalOnce = checkBox(
        box, tr("Evaluate identical answers once"), QStringLiteral("evaluateIdenticalOnceCheck"),
        tr("An answer of a task identical byte for byte to one already sent is not evaluated again: it is stored "
           "with that one's verdict and timing, marked as reused (a machine failure is never reused). Saves GPU "
           "time where a model or a recorded server repeats itself; each copy no longer draws its own timing "
           "noise. Off: every answer is evaluated. Stored with the run."));
    form->addRow(m_evaluateIdenticalOnce);
    m_identicalAcrossRuns = checkBox(
        box, tr("… also from the database's other runs"), QStringLiteral("identicalAcrossRunsCheck"),
        tr("An answer identical to one another run of this database evaluated takes that verdict, where that run's "
           "evaluation settings are this one's (profile, scale, trials, limits, seeds, the same kwb build and "
           "GPU; not the model, prompts or regime). For regimes and sweeps against a recorded server. Stored with "
           "the run."));
    m_identicalAcrossRuns->setEnabled(false);
    connect(m_evaluateIdenticalOnce, &QCheckBox::toggled, m_identicalAcrossRuns, &QWidget::setEnabled);
    form->addRow(m_identicalAcrossRuns);
    form->addRow(tr("Database"), dbRow);
    m_databaseProblem = problemLabel(box, QStringLiteral("databaseProblem"), QStringLiteral("#b01e1e"));
    form->addRow(QString(), m_databaseProblem);
    return box;
}

QWidget* LaunchPage::buildControlBox()
{
    auto* box = new QGroupBox(tr("Run"), this);
    auto* layout = new QVBoxLayout(box);
    auto* buttons = new QHBoxLayout;
    m_start = new QPushButton(tr("Start"), box);
    m_start->setObjectName(QStringLiteral("startButton"));
    m_start->setDefault(true);
    m_queue = new QPushButton(tr("Add to queue"), box);
    m_queue->setObjectName(QStringLiteral("queueButton"));
    m_pause = new QPushButton(tr("Pause"), box);
    m_pause->setObjectName(QStringLiteral("pauseButton"));
    m_pause->setToolTip(tr("Let the model requests in flight finish, then stop; Resume continues the run where it "
                           "stopped (kwb run --resume)"));
    m_cancel = new QPushButton(tr("Cancel"), box);
    m_cancel->setObjectName(QStringLiteral("cancelButton"));
    m_cancel->setToolTip(tr("Stop now; what was stored stays and the run can be resumed"));
    buttons->addWidget(m_start);
    buttons->addWidget(m_queue);
    buttons->addStretch(1);
    buttons->addWidget(m_pause);
    buttons->addWidget(m_cancel);
    layout->addLayout(buttons);
    connect(m_start, &QPushButton::clicked, this, [this] { start(); });
    connect(m_queue, &QPushButton::clicked, this, [this] { enqueue(); });
    connect(m_pause, &QPushButton::clicked, this, [this] {
        RunSession* session = m_manager->current();
        if (!session)
            return;
        if (session->state() == RunSession::State::Paused)
            session->resume();
        else
            session->pause();
    });
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (RunSession* session = m_manager->current())
            session->cancel();
    });

    m_runState = new QLabel(box);
    m_runState->setObjectName(QStringLiteral("runState"));
    m_runState->setWordWrap(true);
    layout->addWidget(m_runState);
    m_message = new QLabel(box);
    m_message->setObjectName(QStringLiteral("launchMessage"));
    m_message->setWordWrap(true);
    layout->addWidget(m_message);

    layout->addWidget(new QLabel(tr("Queued runs (the next starts when a run finishes):"), box));
    m_queueList = new QListWidget(box);
    m_queueList->setObjectName(QStringLiteral("queueList"));
    layout->addWidget(m_queueList, 1);
    auto* queueButtons = new QHBoxLayout;
    m_removeQueued = new QPushButton(tr("Remove"), box);
    m_startNext = new QPushButton(tr("Start next"), box);
    m_startNext->setObjectName(QStringLiteral("startNextButton"));
    queueButtons->addWidget(m_removeQueued);
    queueButtons->addWidget(m_startNext);
    queueButtons->addStretch(1);
    layout->addLayout(queueButtons);
    connect(m_removeQueued, &QPushButton::clicked, this,
            [this] { m_manager->removeQueued(m_queueList->currentRow()); });
    connect(m_startNext, &QPushButton::clicked, this, [this] { m_manager->startNext(); });
    connect(m_queueList, &QListWidget::currentRowChanged, this, &LaunchPage::updateQueueList);
    return box;
}

// ---- tasks ------------------------------------------------------------------------------------

void LaunchPage::setTaskCatalog(const QList<QPair<QString, QString>>& tasks)
{
    const QStringList selected = selectedTasks();
    fillTaskTree(tasks);
    setSelectedTasks(selected);
}

void LaunchPage::fillTaskTree(const QList<QPair<QString, QString>>& tasks)
{
    const QSignalBlocker blocker(m_tasks);
    m_tasks->clear();
    m_taskItems.clear();
    QMap<int, QTreeWidgetItem*> levels;
    for (const auto& [id, title] : tasks) {
        const int level = taskLevel(id);
        QTreeWidgetItem* parent = levels.value(level);
        if (!parent) {
            parent = new QTreeWidgetItem(m_tasks, {level > 0 ? tr("Level %1").arg(level) : tr("Other")});
            parent->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsAutoTristate);
            parent->setCheckState(0, Qt::Unchecked);
            levels.insert(level, parent);
        }
        auto* item = new QTreeWidgetItem(parent, {id, title});
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemNeverHasChildren);
        item->setCheckState(0, Qt::Unchecked);
        m_taskItems.insert(id, item);
    }
    m_tasks->expandAll();
    updateTaskSummary();
}

void LaunchPage::selectTaskSet(const QString& name)
{
    QString error;
    setSelectedTasks(parseTaskSpec(name, &error));
}

QString LaunchPage::selectedTaskSet() const
{
    const QStringList ids = selectedTasks();
    if (ids.isEmpty())
        return QString();
    // A set is chosen when exactly its tasks that this page offers are checked.
    for (const TaskSetInfo& set : taskSets()) {
        QString error;
        QStringList offered;
        for (const QString& id : parseTaskSpec(set.spec, &error))
            if (m_taskItems.contains(id))
                offered << id;
        if (offered == ids)
            return set.name;
    }
    return QString();
}

void LaunchPage::setSelectedTasks(const QStringList& taskIds)
{
    {
        const QSignalBlocker blocker(m_tasks);
        for (auto it = m_taskItems.begin(); it != m_taskItems.end(); ++it)
            it.value()->setCheckState(0, taskIds.contains(it.key()) ? Qt::Checked : Qt::Unchecked);
    }
    // Auto-tristate parents follow their children only through itemChanged, which was blocked.
    for (int i = 0; i < m_tasks->topLevelItemCount(); ++i) {
        QTreeWidgetItem* level = m_tasks->topLevelItem(i);
        int checked = 0;
        for (int j = 0; j < level->childCount(); ++j)
            checked += level->child(j)->checkState(0) == Qt::Checked ? 1 : 0;
        const QSignalBlocker blocker(m_tasks);
        level->setData(0, Qt::CheckStateRole,
                       checked == 0                     ? Qt::Unchecked
                       : checked == level->childCount() ? Qt::Checked
                                                        : Qt::PartiallyChecked);
    }
    updateTaskSummary();
}

QStringList LaunchPage::selectedTasks() const
{
    QStringList ids;
    for (int i = 0; i < m_tasks->topLevelItemCount(); ++i) {
        const QTreeWidgetItem* level = m_tasks->topLevelItem(i);
        for (int j = 0; j < level->childCount(); ++j)
            if (level->child(j)->checkState(0) == Qt::Checked)
                ids << level->child(j)->text(0);
    }
    return ids;
}

void LaunchPage::updateTaskSummary()
{
    const QStringList ids = selectedTasks();
    const int total = int(m_taskItems.size());
    {
        const QSignalBlocker blocker(m_allTasks);
        m_allTasks->setCheckState(ids.isEmpty()         ? Qt::Unchecked
                                  : ids.size() == total ? Qt::Checked
                                                        : Qt::PartiallyChecked);
    }
    const QString set = selectedTaskSet();
    {
        const QSignalBlocker blocker(m_taskSet);
        m_taskSet->setCurrentIndex(std::max(0, m_taskSet->findData(set)));
    }
    m_taskSummary->setText(ids.isEmpty() ? tr("No task chosen")
                                         : tr("%1: %2").arg(counted(ids.size(), tr("task"), tr("tasks")),
                                                            set.isEmpty() ? taskSpecFor(ids) : set));
}

// ---- regime -----------------------------------------------------------------------------------

void LaunchPage::setRegime(const QString& name)
{
    m_single->setChecked(true);
    m_regime->setCurrentIndex(m_regime->findData(name));
    updateRegimeSummary();
}

void LaunchPage::setRouting(const Routing& routing)
{
    m_routed->setChecked(true);
    for (int level = 1; level <= kLevels; ++level)
        m_levelRegimes.at(level - 1)->setCurrentIndex(m_levelRegimes.at(level - 1)->findData(routing.regimeFor(level)));
    m_fallback->setCurrentIndex(m_fallback->findData(routing.fallback));
    updateRegimeSummary();
}

void LaunchPage::setAblations(const Ablations& ablations)
{
    m_offBestOfN->setChecked(!ablations.bestOfN);
    m_offFeedbackAnalyzer->setChecked(!ablations.feedbackAnalyzer);
    m_offMonotone->setChecked(!ablations.monotone);
    m_offCompetence->setChecked(!ablations.competenceMatched);
}

void LaunchPage::updateRegimeSummary()
{
    const bool routed = m_routed->isChecked();
    m_regime->setEnabled(!routed);
    for (QComboBox* combo : std::as_const(m_levelRegimes))
        combo->setEnabled(routed);
    m_fallback->setEnabled(routed);
    if (const auto regime = Regime::find(m_regime->currentData().toString()))
        m_regimeDescription->setText(regime->description);

    QString error;
    RunRequest r = request();
    if (r.taskIds.isEmpty())
        r.taskIds = {QStringLiteral("L1/1")}; // the summary is about the regime, not the tasks
    const std::optional<RunPlan> p = planRun(r, &error);
    if (!p) {
        m_effective->setText(error.toHtmlEscaped());
        return;
    }
    QString text;
    if (p->routing) {
        for (auto it = p->levelRegimes.cbegin(); it != p->levelRegimes.cend(); ++it)
            text += tr("<b>L%1 %2</b>: %3<br>")
                        .arg(it.key())
                        .arg(it.value().name, regimeSummary(it.value()).toHtmlEscaped());
        text += tr("<b>other %1</b>: %2").arg(p->regime.name, regimeSummary(p->regime).toHtmlEscaped());
    } else {
        text = tr("<b>%1</b>: %2").arg(p->regime.name, regimeSummary(p->regime).toHtmlEscaped());
    }
    m_effective->setText(text);
}

// ---- the request ------------------------------------------------------------------------------

RunRequest LaunchPage::request() const
{
    RunRequest r;
    r.taskIds = selectedTasks();
    const QString set = selectedTaskSet();
    r.taskSpec = set.isEmpty() ? taskSpecFor(r.taskIds) : set;
    r.regime = m_regime->currentData().toString();
    if (m_routed->isChecked()) {
        Routing routing;
        for (int level = 1; level <= kLevels; ++level)
            routing.byLevel.insert(level, m_levelRegimes.at(level - 1)->currentData().toString());
        routing.fallback = m_fallback->currentData().toString();
        r.routing = routing;
    }
    r.ablations.bestOfN = !m_offBestOfN->isChecked();
    r.ablations.feedbackAnalyzer = !m_offFeedbackAnalyzer->isChecked();
    r.ablations.monotone = !m_offMonotone->isChecked();
    r.ablations.competenceMatched = !m_offCompetence->isChecked();
    r.n = m_n->value();
    r.turns = m_turns->value();
    r.temperature = m_temperature->value() < 0 ? -1 : m_temperature->value();
    if (const int stop = m_stopWhenCorrect->currentData().toInt(); stop >= 0)
        r.stopWhenCorrect = stop == 1;
    r.endpoint = m_endpoint->text().trimmed();
    r.model = m_model->currentText().trimmed();
    r.profile = m_profile->currentText();
    r.scale = m_scale->currentText();
    r.timeoutS = m_timeout->value();
    r.modelTimeoutS = m_modelTimeout->value();
    r.contextTokens = m_contextTokens->value();
    r.timingTrials = m_timingTrials->value();
    r.isolation = m_isolation->currentData().toString();
    r.workerLimits.hostMemoryBytes = qint64(m_maxHostMemory->value() * double(qint64(1) << 30));
    r.workerLimits.osSandbox = m_osSandbox->isChecked();
    r.compileOnly = m_compileOnly->isChecked();
    r.pauseGenerationWhileTiming = m_pauseGeneration->isChecked();
    r.evaluateIdenticalOnce = m_evaluateIdenticalOnce->isChecked();
    r.identicalAcrossRuns = r.evaluateIdenticalOnce && m_identicalAcrossRuns->isChecked();
    r.answerFormat = m_answerFormat->currentData().toString();
    // The default set follows the answer format (defaultPromptsDirFor); a set chosen elsewhere stays.
    r.promptsDir = m_promptsDir == defaultPromptsDir() ? defaultPromptsDirFor(r.answerFormat) : m_promptsDir;
    return r;
}

std::optional<RunPlan> LaunchPage::plan(QString* error) const
{
    if (const QString spec = m_workers->text().trimmed(); !spec.isEmpty()) {
        QString why;
        if (!parseWorkerSpec(spec, m_manager->defaultEnvironment().gpuOrdinals, &why)) {
            if (error)
                *error = why;
            return std::nullopt;
        }
    }
    const RunRequest r = request();
    const QUrl url(r.endpoint);
    if (!url.isValid() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https"))) {
        if (error)
            *error = tr("the endpoint \"%1\" is not an http(s) URL").arg(r.endpoint);
        return std::nullopt;
    }
    return planRun(r, error);
}

RunSessionEnvironment LaunchPage::environment() const
{
    RunSessionEnvironment env = m_manager->defaultEnvironment();
    env.databasePath = databasePath();
    env.apiKey = m_apiKey->text().isEmpty() ? secrets::environmentApiKey() : m_apiKey->text();
    env.stream = m_stream->isChecked();
    if (const QString spec = m_workers->text().trimmed(); !spec.isEmpty()) // checked in plan()
        env.workers = parseWorkerSpec(spec, env.gpuOrdinals, nullptr).value_or(QList<WorkerTarget>());
    if (m_compileWorkers->value() != RunEnvironment::kAutomatic) // automatic: the manager's default
        env.compileWorkers = m_compileWorkers->value();
    if (m_evaluationsPerGpu->value() > 0) // 0, automatic: the manager's default
        env.evaluationsPerGpu = m_evaluationsPerGpu->value();
    return env;
}

void LaunchPage::setDatabasePath(const QString& path)
{
    m_database->setText(path);
    // A choice the user made stays chosen: reopening the window or another database keeps it.
    QSettings().setValue(kLaunchDatabaseKey, path.trimmed());
    checkDatabase();
}

QString LaunchPage::databaseProblem() const
{
    const QString path = databasePath();
    if (path.isEmpty())
        return tr("choose a database file");
    const StoreFile file = RunStore::inspect(path, false);
    // A folder that does not exist yet is made when the run starts.
    if (file.kind == StoreFile::Kind::Missing && !QFileInfo::exists(QFileInfo(path).absolutePath()))
        return QString();
    return file.writeRefusal();
}

void LaunchPage::checkDatabase()
{
    if (!m_databaseProblem)
        return;
    const QString problem = databaseProblem();
    m_databaseProblem->setText(problem.isEmpty() ? QString() : tr("Runs cannot be written there: %1").arg(problem));
    m_databaseProblem->setVisible(!problem.isEmpty());
    for (QPushButton* b : {m_start, m_queue}) {
        if (!b)
            continue;
        b->setEnabled(problem.isEmpty());
        b->setToolTip(problem.isEmpty() ? QString() : tr("Choose another database: %1").arg(problem));
    }
}

QString LaunchPage::databasePath() const
{
    return m_database->text().trimmed();
}

void LaunchPage::setEndpoint(const QString& url)
{
    m_endpoint->setText(url);
}

void LaunchPage::setModel(const QString& model)
{
    m_model->setCurrentText(model);
}

void LaunchPage::setApiKey(const QString& key)
{
    m_apiKey->setText(key);
}

bool LaunchPage::start()
{
    if (const QString problem = databaseProblem(); !problem.isEmpty()) {
        checkDatabase();
        showMessage(tr("Cannot start: %1").arg(problem), true);
        return false;
    }
    QString error;
    const std::optional<RunPlan> p = plan(&error);
    if (!p) {
        showMessage(tr("Cannot start: %1").arg(error), true);
        return false;
    }
    const RunSessionEnvironment env = environment();
    QDir().mkpath(QFileInfo(env.databasePath).absolutePath());
    const bool now = m_manager->submit(*p, env);
    showMessage(now ? tr("Started %1").arg(p->runName()) : tr("Queued %1 behind the running run").arg(p->runName()),
                false);
    Q_EMIT runSubmitted(now);
    return true;
}

bool LaunchPage::enqueue()
{
    if (const QString problem = databaseProblem(); !problem.isEmpty()) {
        checkDatabase();
        showMessage(tr("Cannot queue: %1").arg(problem), true);
        return false;
    }
    QString error;
    const std::optional<RunPlan> p = plan(&error);
    if (!p) {
        showMessage(tr("Cannot queue: %1").arg(error), true);
        return false;
    }
    const RunSessionEnvironment env = environment();
    QDir().mkpath(QFileInfo(env.databasePath).absolutePath());
    m_manager->enqueue(*p, env);
    showMessage(tr("Queued %1").arg(p->runName()), false);
    if (!m_manager->isBusy())
        m_manager->startNext();
    Q_EMIT runSubmitted(false);
    return true;
}

bool LaunchPage::resumeRun(const QString& databasePath, qint64 runId, QString* error)
{
    const auto failWith = [&](const QString& message) {
        showMessage(tr("Cannot resume run %1: %2").arg(runId).arg(message), true);
        if (error)
            *error = message;
        return false;
    };
    // A resumed run writes into its own file: it must be a run store that may be written.
    RunStore store;
    if (!QFileInfo(databasePath).isFile() || !store.open(databasePath, OpenOptions{OpenOptions::Access::Write, false}))
        return failWith(store.errorString().isEmpty() ? tr("no such database %1").arg(databasePath)
                                                      : store.errorString());
    const std::optional<RunInfo> info = store.run(runId);
    if (!info)
        return failWith(tr("no run %1 in %2").arg(runId).arg(databasePath));
    QString why;
    std::optional<RunPlan> p = planResume(*info, &why);
    if (!p)
        return failWith(why);
    if (p->promptsDir.isEmpty() || !QFileInfo(p->promptsDir).isDir())
        p->promptsDir = m_promptsDir == defaultPromptsDir() ? defaultPromptsDirFor(p->answerFormat) : m_promptsDir;
    RunSessionEnvironment env = environment();
    env.databasePath = databasePath;
    const bool now = m_manager->submit(*p, env);
    showMessage(now ? tr("Resuming run %1").arg(runId) : tr("Run %1 queued to resume").arg(runId), false);
    Q_EMIT runSubmitted(now);
    return true;
}

// ---- connection test --------------------------------------------------------------------------

void LaunchPage::testConnection()
{
    if (m_probing)
        return;
    const QUrl url(m_endpoint->text().trimmed());
    if (!url.isValid() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https"))) {
        m_connectionStatus = tr("Failed: \"%1\" is not an http(s) URL").arg(m_endpoint->text());
        m_connection->setText(m_connectionStatus);
        m_connection->setStyleSheet(QStringLiteral("color: #b01e1e;"));
        Q_EMIT connectionTested(false);
        return;
    }
    LlmSettings settings;
    settings.baseUrl = url;
    settings.apiKey = m_apiKey->text().isEmpty() ? secrets::environmentApiKey() : m_apiKey->text();
    settings.timeoutMs = 10 * 1000; // a listing is quick; do not wait an answer's five minutes
    m_probe->setSettings(settings);
    m_probing = true;
    m_test->setEnabled(false);
    m_connectionStatus.clear();
    m_connection->setText(tr("Asking %1/models …").arg(url.toString()));
    m_connection->setStyleSheet(QString());
    m_probe->listModels();
}

QString LaunchPage::connectionStatus() const
{
    return m_connectionStatus;
}

// ---- run controls -----------------------------------------------------------------------------

void LaunchPage::updateRunControls()
{
    RunSession* session = m_manager->current();
    const bool busy = m_manager->isBusy();
    const RunSession::State state = session ? session->state() : RunSession::State::Idle;
    m_pause->setEnabled(session && (state == RunSession::State::Running || state == RunSession::State::Paused));
    m_pause->setText(state == RunSession::State::Paused ? tr("Resume") : tr("Pause"));
    m_cancel->setEnabled(busy);
    m_start->setText(busy ? tr("Start after the running run") : tr("Start"));
    if (!session) {
        m_runState->setText(tr("No run yet."));
    } else {
        QString text = tr("Run %1: <b>%2</b>").arg(session->label().toHtmlEscaped(), RunSession::stateText(state));
        if (state == RunSession::State::Running || state == RunSession::State::Pausing)
            text += tr(", %1/%2 tasks").arg(session->tasksDone()).arg(session->tasksTotal());
        if (state == RunSession::State::Failed)
            text += QStringLiteral(": ") + session->errorString().toHtmlEscaped();
        m_runState->setText(text);
    }
    updateQueueList();
}

void LaunchPage::updateQueueList()
{
    const QList<QueuedRun> queued = m_manager->queued();
    QStringList labels;
    for (const QueuedRun& run : queued)
        labels << run.label();
    QStringList shown;
    for (int i = 0; i < m_queueList->count(); ++i)
        shown << m_queueList->item(i)->text();
    if (labels != shown) { // rebuilt only when it changed, so the selection stays
        const QSignalBlocker blocker(m_queueList);
        const int row = m_queueList->currentRow();
        m_queueList->clear();
        m_queueList->addItems(labels);
        m_queueList->setCurrentRow(qMin(row, m_queueList->count() - 1));
    }
    m_removeQueued->setEnabled(m_queueList->currentRow() >= 0);
    m_startNext->setEnabled(!queued.isEmpty() && !m_manager->isBusy());
}

void LaunchPage::showMessage(const QString& text, bool error)
{
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color: #b01e1e;") : QString());
}

void LaunchPage::chooseDatabase()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Run database"), databasePath(),
                                                      tr("Run databases (*.db *.sqlite *.sqlite3);;All files (*)"),
                                                      nullptr, QFileDialog::DontConfirmOverwrite);
    if (!path.isEmpty())
        setDatabasePath(path);
}

} // namespace kwb::app

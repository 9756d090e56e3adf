#include "app/analysispages.h"

#include "app/charts/gpuchooser.h"
#include "app/charts/trafficchart.h"
#include "app/editor/candidatediffview.h"
#include "core/protocol/evaluationstatus.h"
#include "core/store/runstore.h"
#include "core/study/provenance.h"
#include "core/tasks/taskcatalog.h"
#include "core/workers/jobtracker.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <algorithm>

namespace kwb::app {

TrafficPage::TrafficPage(TaskCatalog* catalog, QWidget* parent)
    : QWidget(parent)
    , m_catalog(catalog)
{
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    m_task = new QComboBox(this);
    m_task->setMinimumContentsLength(40);
    m_task->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    top->addWidget(new QLabel(tr("Task:"), this));
    top->addWidget(m_task);
    // Bytes become time at this GPU's bandwidth (issue 38): the shipped study's H200 until a
    // worker or a database names one.
    m_gpu = new GpuChooser(QStringLiteral("h200-sxm-141gb"), this);
    m_gpu->setToolTip(tr("The GPU whose HBM bandwidth turns each total's bytes into the least time they take"));
    top->addWidget(new QLabel(tr("GPU:"), this));
    top->addWidget(m_gpu);
    m_measure = new QPushButton(tr("Measure on this GPU"), this);
    m_measure->setToolTip(tr("Profile the eager reference with CUPTI and draw each op's measured time as the bytes "
                             "it would move at the GPU's bandwidth"));
    top->addWidget(m_measure);
    top->addStretch(1);
    layout->addLayout(top);
    m_note = new QLabel(
        tr("Unfused, every operator reads its inputs from HBM and writes its output back; library op + fused "
           "epilogue, each matmul/conv keeps its own traffic and the ops after it run as one pass; one "
           "kernel reads the inputs once and writes the result once (docs/roofline.md). Bytes are "
           "computed from the shapes (analyze)."),
        this);
    m_note->setWordWrap(true);
    layout->addWidget(m_note);
    m_chart = new TrafficChart(this);
    layout->addWidget(m_chart, 1);

    connect(m_task, &QComboBox::currentIndexChanged, this, &TrafficPage::update);
    auto timeAt = [this](const GpuRoofs& roofs) {
        const Roof* memory = roofs.primaryMemory();
        m_chart->setGpu(roofs.name, memory ? memory->value : 0.0, memory ? memory->originText() : QString());
    };
    connect(m_gpu, &GpuChooser::roofsChanged, this, timeAt);
    timeAt(m_gpu->selectedRoofs());
    connect(m_measure, &QPushButton::clicked, this, [this] {
        m_pending = currentTask();
        update();
        Q_EMIT measureRequested(m_pending);
    });
    connect(m_catalog, &TaskCatalog::tasksReset, this, &TrafficPage::fillTasks);
    connect(m_catalog, &TaskCatalog::taskUpdated, this, [this](const QString& id) {
        if (id == currentTask())
            update();
    });
    fillTasks();
}

void TrafficPage::fillTasks()
{
    // Nothing asked for yet: a fusion task (a GEMM or conv with an epilogue), where the three bars
    // differ and fusion's saving shows; L1/1's three equal bars teach nothing (issue 38).
    QString keep = m_wanted.isEmpty() ? currentTask() : m_wanted;
    if (keep.isEmpty())
        keep = QStringLiteral("L2/1");
    {
        const QSignalBlocker block(m_task);
        m_task->clear();
        for (const TaskInfo& t : m_catalog->tasks())
            m_task->addItem(QStringLiteral("%1  %2").arg(t.id, t.title), t.id);
    }
    const int i = m_task->findData(keep);
    m_task->setCurrentIndex(i >= 0 ? i : 0);
    update();
}

bool TrafficPage::showTask(const QString& id)
{
    m_wanted = id;
    const int i = m_task->findData(id);
    if (i < 0)
        return false;
    m_task->setCurrentIndex(i);
    update();
    return true;
}

void TrafficPage::setCurrentDevice(const DeviceFacts& device, const QString& origin)
{
    m_gpu->setCurrentDevice(device, origin);
}

QString TrafficPage::currentTask() const
{
    return m_task->currentData().toString();
}

void TrafficPage::setMeasureAvailable(bool available, const QString& why)
{
    m_measureAvailable = available;
    m_measureWhy = why;
    update();
}

void TrafficPage::setProfile(const QString& task, const ProfileResult& profile, double bandwidthGBps,
                             const QString& origin)
{
    m_measured.insert(task, Measured{profile, bandwidthGBps, origin});
    if (m_pending == task)
        m_pending.clear();
    if (task == currentTask())
        update();
}

void TrafficPage::setProfileFailed(const QString& task, const QString& message)
{
    if (m_pending == task)
        m_pending.clear();
    update();
    if (task == currentTask())
        m_note->setText(tr("Profiling %1 failed: %2").arg(task, message));
}

void TrafficPage::update()
{
    const QString id = currentTask();
    const bool busy = !m_pending.isEmpty();
    m_measure->setEnabled(m_measureAvailable && !busy && !id.isEmpty());
    m_measure->setText(busy ? tr("Measuring %1 …").arg(m_pending) : tr("Measure on this GPU"));
    if (!m_measureAvailable && !m_measureWhy.isEmpty())
        m_measure->setToolTip(tr("Needs a GPU: %1").arg(m_measureWhy));
    const TaskInfo* task = m_catalog->task(id);
    if (!task || !task->hasAnalysis()) {
        m_chart->setAnalysis(AnalyzeResult());
        return;
    }
    m_chart->setAnalysis(task->analysis); // clears any measurement
    const auto measured = m_measured.constFind(id);
    if (measured != m_measured.cend() && measured->bandwidthGBps > 0) {
        m_chart->setMeasured(measured->profile, measured->bandwidthGBps, measured->origin);
        m_note->setText(tr("Analytic bytes from the shapes, and each op's time measured with CUPTI on this GPU, "
                           "drawn as the bytes it would move at %1 GB/s (%2).")
                            .arg(measured->bandwidthGBps, 0, 'f', 0)
                            .arg(measured->origin));
    } else {
        m_note->setText(
            tr("Unfused, every operator reads its inputs from HBM and writes its output back; library op + fused "
               "epilogue, each matmul/conv keeps its own traffic and the ops after it run as one pass; one "
               "kernel reads the inputs once and writes the result once (docs/roofline.md). Bytes are "
               "computed from the shapes (analyze); \"Measure on this GPU\" adds each op's measured time."));
    }
}

BestOfNPage::BestOfNPage(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    m_note = new QLabel(tr("Solid: the study's best-of-n, from the sweeps among the runs checked on the Results page "
                           "(kwb sweep: the whole regime, every turn and its selection, run once per n; each point "
                           "is that run's correct %, as kwb report's \"Best-of-n\" table gives it). Dashed: first-turn "
                           "pass@n (unbiased estimator) of runs with several first-turn samples per task, the chance "
                           "that one of n of a task's first-turn samples is correct, averaged over every task "
                           "(missing samples count as failures); of a sweep, its run with the largest n. 95 % "
                           "bootstrap intervals over tasks (and samples). A sample whose time is below the roofline "
                           "floor is not counted as correct; a run with such samples is ringed in red, and its "
                           "tooltip says which and why."),
                        this);
    m_note->setWordWrap(true);
    layout->addWidget(m_note);
    m_chart = new BestOfNChart(this);
    layout->addWidget(m_chart, 1);
}

void BestOfNPage::setCurves(const QList<BestOfNSeries>& curves)
{
    m_chart->setCurves(curves);
}

namespace {

const QString kCandidatesSlot = QStringLiteral("candidates");
const QString kPairSlot = QStringLiteral("pair");

} // namespace

DiffPage::DiffPage(QWidget* parent)
    : QWidget(parent)
    , m_jobs(new JobTracker(this))
    , m_reader(&DiffPage::readCandidates)
{
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_task = new QComboBox(this);
    m_left = new QComboBox(this);
    m_right = new QComboBox(this);
    for (QComboBox* c : {m_left, m_right}) {
        c->setMinimumContentsLength(50);
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    }
    form->addRow(tr("Task:"), m_task);
    form->addRow(tr("Left:"), m_left);
    form->addRow(tr("Right:"), m_right);
    layout->addLayout(form);
    m_note = new QLabel(tr("No run database open: File > Open Run Database…"), this);
    m_note->setWordWrap(true);
    layout->addWidget(m_note);
    m_view = new CandidateDiffView(this);
    layout->addWidget(m_view, 1);
    connect(m_task, &QComboBox::currentIndexChanged, this, &DiffPage::loadTask);
    connect(m_left, &QComboBox::currentIndexChanged, this, &DiffPage::showPair);
    connect(m_right, &QComboBox::currentIndexChanged, this, &DiffPage::showPair);
}

DiffPage::~DiffPage()
{
    delete m_jobs; // waits for a read still running, before the widgets its result would fill go
    m_jobs = nullptr;
}

QList<CandidateEntry> DiffPage::readCandidates(const QString& path, const QString& task)
{
    RunStore store; // its own connection, in the pool's thread
    if (!store.open(path))
        return {};
    return candidatesOfTask(store, task);
}

void DiffPage::setCandidateReader(CandidateReader reader)
{
    m_reader = std::move(reader);
}

bool DiffPage::isLoading() const
{
    return m_jobs->isBusy(kCandidatesSlot) || m_jobs->isBusy(kPairSlot);
}

bool DiffPage::setDatabase(const QString& path, QString* error)
{
    RunStore store; // only to say now whether the file opens; the reads open their own
    if (!store.open(path)) {
        if (error)
            *error = store.errorString();
        return false;
    }
    store.close();
    m_path = path;
    // The candidates of a task are read when the page is shown, not while the window opens a
    // large database.
    loadTaskWhenShown();
    return true;
}

void DiffPage::setTasks(const QList<QPair<QString, QString>>& tasks)
{
    const QString keep = currentTask();
    {
        const QSignalBlocker block(m_task);
        m_task->clear();
        // By id and name ("L2/1  Conv2d, ReLU and bias"), the id as the item's data.
        for (const auto& [id, title] : tasks)
            m_task->addItem(title.isEmpty() ? id : QStringLiteral("%1  %2").arg(id, title), id);
    }
    const int i = m_task->findData(keep);
    m_task->setCurrentIndex(i >= 0 ? i : 0);
    loadTaskWhenShown();
}

void DiffPage::loadTaskWhenShown()
{
    m_stale = !isVisible();
    if (m_stale)
        m_jobs->cancel(kCandidatesSlot); // for a database or task list no longer current
    if (!m_stale)
        loadTask();
}

void DiffPage::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (m_stale) {
        m_stale = false;
        loadTask();
    }
}

QString DiffPage::currentTask() const
{
    return m_task->currentData().toString();
}

namespace {

/// What a candidate's code is, to tell two candidates apart (TaskCandidate::codeKey); one whose
/// code nobody named is distinct from every other.
QString codeKey(const CandidateEntry& entry)
{
    return entry.candidate.codeKey.isEmpty() ? QStringLiteral("evaluation %1").arg(entry.candidate.evaluationId)
                                             : entry.candidate.codeKey;
}

} // namespace

std::pair<int, int> DiffPage::defaultPair(const QList<CandidateEntry>& entries)
{
    if (entries.size() < 2)
        return {0, 0};
    // Right: the task's one best, as the reader marked it (core/study/taskbest.h).
    const auto marked = std::find_if(entries.cbegin(), entries.cend(), [](const CandidateEntry& e) { return e.best; });
    const int best = marked == entries.cend() ? 0 : int(marked - entries.cbegin());
    // Left: a candidate with other code, preferring the same run's previous turn (what the
    // model changed to get there), then the same run, then any run; never the same code.
    const QString bestCode = codeKey(entries.at(best));
    const CandidateEntry& b = entries.at(best);
    int left = -1;
    int score = -1;
    for (int i = 0; i < entries.size(); ++i) {
        if (i == best || codeKey(entries.at(i)) == bestCode)
            continue;
        const CandidateEntry& e = entries.at(i);
        const bool sameRun = e.runId == b.runId;
        const int s = sameRun && e.candidate.turn == b.candidate.turn - 1 ? 3
                      : sameRun && e.candidate.turn < b.candidate.turn    ? 2
                      : sameRun                                           ? 1
                                                                          : 0;
        if (s > score) {
            score = s;
            left = i;
        }
    }
    if (left < 0)
        left = best == 0 ? 1 : 0; // every candidate has the same code: two of them, not one twice
    return {left, best};
}

bool DiffPage::showTask(const QString& id)
{
    const int i = m_task->findData(id);
    if (i < 0)
        return false;
    {
        const QSignalBlocker block(m_task);
        m_task->setCurrentIndex(i);
    }
    loadTask();
    return true;
}

bool DiffPage::selectPair(int left, int right)
{
    if (left < 0 || right < 0 || left >= m_entries.size() || right >= m_entries.size())
        return false;
    {
        const QSignalBlocker a(m_left), b(m_right);
        m_left->setCurrentIndex(left);
        m_right->setCurrentIndex(right);
    }
    showPair();
    return true;
}

void DiffPage::loadTask()
{
    m_stale = false;
    m_jobs->cancel(kPairSlot); // a pair of the task shown before
    m_entries.clear();
    m_summary.clear();
    {
        const QSignalBlocker a(m_left), b(m_right);
        m_left->clear();
        m_right->clear();
    }
    m_view->clear();
    const QString task = currentTask();
    if (m_path.isEmpty() || task.isEmpty()) {
        m_jobs->cancel(kCandidatesSlot);
        m_note->setText(m_path.isEmpty() ? tr("No run database open: File > Open Run Database…") : QString());
        return;
    }
    m_note->setText(tr("Loading the candidates of %1 …").arg(task));
    const QString path = m_path;
    const CandidateReader reader = m_reader;
    // A newer read of the slot drops this one's result, whichever ends first.
    m_jobs->run(
        kCandidatesSlot, [reader, path, task] { return reader(path, task); },
        [this, task](QList<CandidateEntry>&& entries) {
            if (task != currentTask())
                return; // another task chosen while the page was hidden (its read waits for the page)
            m_entries = std::move(entries);
            {
                const QSignalBlocker a(m_left), b(m_right);
                for (const CandidateEntry& e : std::as_const(m_entries)) {
                    m_left->addItem(e.label());
                    m_right->addItem(e.label());
                }
                const auto [left, right] = defaultPair(m_entries);
                m_left->setCurrentIndex(left);
                m_right->setCurrentIndex(right);
            }
            m_summary = m_entries.isEmpty() ? tr("No evaluated candidate of %1 in this database.").arg(task)
                                            : tr("%n evaluated candidate(s) of this task in the database.", nullptr,
                                                 int(m_entries.size()));
            m_note->setText(m_summary);
            Q_EMIT candidatesLoaded(task);
            showPair();
        });
}

void DiffPage::showPair()
{
    const int l = m_left->currentIndex(), r = m_right->currentIndex();
    if (m_path.isEmpty() || l < 0 || r < 0 || l >= m_entries.size() || r >= m_entries.size()) {
        m_jobs->cancel(kPairSlot);
        m_view->clear();
        return;
    }
    // The two candidates' code, answers and evaluations: read only for the pair shown.
    struct Side
    {
        CandidateEntry entry;
        std::optional<CandidateRecord> candidate;
        std::optional<EvaluationRecord> evaluation;
        QString prompts; ///< what it was asked (provenance.h's promptsText)
    };
    struct Pair
    {
        Side left, right;
    };
    const QString path = m_path;
    Pair wanted{{m_entries.at(l), {}, {}, {}}, {m_entries.at(r), {}, {}, {}}};
    m_note->setText(tr("Loading the two candidates …"));
    m_jobs->run(
        kPairSlot,
        [path, wanted]() mutable {
            RunStore store; // its own connection, in the pool's thread
            if (store.open(path))
                for (Side* s : {&wanted.left, &wanted.right}) {
                    s->candidate = store.candidate(s->entry.candidate.candidateId);
                    s->evaluation = store.evaluation(s->entry.candidate.evaluationId);
                    const TaskCandidate& t = s->entry.candidate;
                    s->prompts = promptsText(promptsSentFor(store.prompts(t.runId, t.task), t.turn, t.sample));
                }
            return wanted;
        },
        [this](Pair&& pair) {
            const auto side = [](const Side& s) {
                // The blocks the worker evaluated: its echo in the evaluation, else the store's copy
                // of an echo; a client's parse (a database from before the echo) is not shown as the
                // worker's.
                const std::optional<CandidateRecord>& c = s.candidate;
                std::optional<CandidateEcho> stored;
                if (c && c->blocksFrom == CandidateBlocksFrom::Worker)
                    stored = CandidateEcho{c->cuda, c->python, c->kernels, c->sourceHash, c->cudaLine, c->pythonLine};
                // Who it is; its status and speed-up are the badges beside it (with them the label
                // was cut off at the pane's edge).
                const TaskCandidate& t = s.entry.candidate;
                const QString who = QStringLiteral("%1  %2 · turn %3 · sample %4")
                                        .arg(t.task, s.entry.runLabel)
                                        .arg(t.turn)
                                        .arg(t.sample);
                CandidateSide made = CandidateSide::make(who, c ? c->answer : QString(),
                                                         s.evaluation ? s.evaluation->evaluation() : t.outcome, stored);
                made.prompts = s.prompts;
                return made;
            };
            m_view->setCandidates(side(pair.left), side(pair.right));
            m_note->setText(m_summary);
            Q_EMIT pairShown();
        });
}

} // namespace kwb::app

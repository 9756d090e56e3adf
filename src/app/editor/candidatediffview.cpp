#include "app/editor/candidatediffview.h"

#include "app/editor/kernelcompareview.h"

#include "app/editor/codeeditor.h"
#include "app/editor/sidebysidediffview.h"
#include "core/protocol/evaluationstatus.h"
#include "core/study/evaluationsummary.h"
#include "core/tasks/kernelwork.h"

#include <QAction>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

namespace kwb::app {

namespace {

QString number(const std::optional<double>& v)
{
    return v ? QString::number(*v, 'g', 4) : QStringLiteral("not reported");
}

QString plural(int n, const char* one, const char* many)
{
    return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? one : many));
}

/// The status as people read it: the table's label, or the wire name of a status this build does
/// not know.
QString statusText(const EvaluationResult& e)
{
    return e.status == EvaluationStatus::Unknown && !e.statusName.isEmpty() ? e.statusName : statusLabel(e.status);
}

/// Why a side shows its answer rather than the worker's blocks.
QString whyNoBlocks(const CandidateSide& side)
{
    if (!side.evaluation)
        return QStringLiteral("not evaluated");
    return QStringLiteral("its evaluation (%1) carries no parse from the worker").arg(statusText(*side.evaluation));
}

} // namespace

CandidateSide CandidateSide::make(const QString& label, const QString& answer,
                                  const std::optional<EvaluationResult>& evaluation,
                                  const std::optional<CandidateEcho>& stored)
{
    CandidateSide side;
    side.label = label;
    side.answer = answer;
    side.evaluation = evaluation;
    side.blocks = evaluation && evaluation->candidate ? evaluation->candidate : stored;
    return side;
}

QString CandidateSide::evaluationReport(const std::optional<EvaluationResult>& evaluation)
{
    if (!evaluation)
        return QStringLiteral("Not evaluated: no evaluation is stored for this candidate.");
    const EvaluationResult& e = *evaluation;
    QStringList out;
    const QString status = statusText(e);
    out << (e.stage.isEmpty() ? QStringLiteral("status: %1").arg(status)
                              : QStringLiteral("status: %1 (stopped at: %2)").arg(status, e.stage));
    const QString message = e.message.trimmed();
    if (!message.isEmpty())
        out << QStringLiteral("message: %1").arg(message);
    if (!e.errorCode.isEmpty() || !e.errorMessage.isEmpty())
        out << QStringLiteral("error: %1 %2").arg(e.errorCode, e.errorMessage).trimmed();

    if (e.formatError) {
        QString line = QStringLiteral("format error: %1").arg(e.formatError->code);
        if (e.formatError->line > 0)
            line += QStringLiteral(" (answer line %1)").arg(e.formatError->line);
        if (!e.formatError->message.isEmpty() && e.formatError->message != message)
            line += QStringLiteral(": ") + e.formatError->message;
        out << line;
    }

    if (e.compile) {
        const QString log = e.compile->log.trimmed();
        if (!log.isEmpty()) {
            // Native answers' CUDA goes through NVRTC; KernelBench's format builds with load_inline (nvcc).
            const QString compiler = e.isKernelBenchFormat() ? QStringLiteral("load_inline") : QStringLiteral("NVRTC");
            out << QString()
                << (e.compile->arch.isEmpty() ? QStringLiteral("compile log (%1):").arg(compiler)
                                              : QStringLiteral("compile log (%1, %2):").arg(compiler, e.compile->arch));
            out << log;
        } else if (e.compile->okKnown && !e.compile->ok) {
            out << QStringLiteral("compile: failed, no log");
        }
    }

    if (e.correctness) {
        const CorrectnessInfo& c = *e.correctness;
        out << QString()
            << QStringLiteral(
                   "correctness: passed %1 of %2 trials; max abs diff %3 (atol %4), max rel diff %5 (rtol %6)")
                   .arg(QString::number(c.passed), QString::number(c.trials),
                        nonFiniteOutputs(e) > 0 ? maxAbsDiffText(e) : number(c.maxAbsDiff), number(c.atol),
                        number(c.maxRelDiff), number(c.rtol));
        // NaN outputs and the tolerance rule as the Monitor words them (core/study/evaluationsummary.h).
        out << QStringLiteral("tolerance: an element passes when |out - ref| <= atol + rtol*|ref|");
        for (const QString& reason : notCountedReasons(e))
            out << reason;
        if (c.hasFailure) {
            // The worker counts trials from 0; "range" names the N(0,1) trial.
            bool numeric = false;
            const int trial = c.failureTrial.toInt(&numeric);
            const QString which = numeric ? QString::number(trial + 1) : c.failureTrial;
            out << QStringLiteral("failure (trial %1): %2").arg(which, c.failureReason);
            if (c.failureDetail.isObject())
                out << QStringLiteral("detail: %1")
                           .arg(QString::fromUtf8(
                               QJsonDocument(c.failureDetail.toObject()).toJson(QJsonDocument::Compact)));
            else if (!c.failureDetail.isNull() && !c.failureDetail.isUndefined())
                out << QStringLiteral("detail: %1").arg(c.failureDetail.toVariant().toString());
        }
    }
    if (e.degenerate)
        out << QStringLiteral("degenerate reference (%1): %2").arg(e.degenerate->kind, e.degenerate->message);

    if (e.timing.candidate || e.timing.reference) {
        const auto mean = [](const std::optional<TimingStats>& t) {
            return t ? QString::number(t->meanMs, 'g', 4) : QStringLiteral("?");
        };
        out << QString()
            << QStringLiteral("timing (mean): candidate %1 ms, reference %2 ms")
                   .arg(mean(e.timing.candidate), mean(e.timing.reference));
    }
    if (e.speedup)
        out << QStringLiteral("speedup: %1").arg(formatSpeedup(e));
    if (e.torchOnly)
        out << QStringLiteral("torch only: no custom kernel ran");
    if (const QString traffic = formatTraffic(e.traffic); !traffic.isEmpty()) {
        out << QStringLiteral("HBM traffic: %1").arg(traffic);
        for (const KernelTrafficReading& k : kernelTrafficReadings(e))
            out << QStringLiteral("  %1%2: %3")
                       .arg(k.traffic.name, k.custom ? QStringLiteral(" (its own)") : QString(), k.text);
        if (e.traffic->profiled && e.traffic->perKernel.isEmpty() && !e.traffic->perKernelReason.isEmpty())
            out << QStringLiteral("  not counted per kernel: %1").arg(e.traffic->perKernelReason);
    }
    for (const EvaluationNote& note : e.notes)
        out << QStringLiteral("note (%1): %2").arg(note.code, note.message);
    const QString stderrTail = e.log.trimmed();
    if (!stderrTail.isEmpty())
        out << QString() << QStringLiteral("worker log:") << stderrTail;
    return out.join(QLatin1Char('\n'));
}

CandidateDiffView::CandidateDiffView(QWidget* parent)
    : QWidget(parent)
{
    m_stack = new QStackedWidget(this);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_stack);

    m_empty = new QLabel(tr("No candidates to compare.\nPick a task with two evaluated candidates above to see "
                            "their code side by side."),
                         this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_empty->setObjectName(QStringLiteral("emptyState"));
    m_stack->addWidget(m_empty);

    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->setSpacing(4);

    auto* toolbar = new QToolBar(page);
    toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    m_previous = new QAction(tr("Previous change"), this);
    m_previous->setShortcuts({QKeySequence(Qt::SHIFT | Qt::Key_F7), QKeySequence(Qt::ALT | Qt::Key_Up)});
    m_previous->setToolTip(tr("Previous change (Shift+F7, Alt+Up)"));
    m_next = new QAction(tr("Next change"), this);
    m_next->setShortcuts({QKeySequence(Qt::Key_F7), QKeySequence(Qt::ALT | Qt::Key_Down)});
    m_next->setToolTip(tr("Next change (F7, Alt+Down)"));
    for (QAction* a : {m_previous, m_next}) {
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        addAction(a);
        toolbar->addAction(a);
    }
    connect(m_previous, &QAction::triggered, this, &CandidateDiffView::previousChange);
    connect(m_next, &QAction::triggered, this, &CandidateDiffView::nextChange);
    m_position = new QLabel(page);
    m_changes = new QLabel(page);
    m_changes->setObjectName(QStringLiteral("changeCount"));
    toolbar->addSeparator();
    toolbar->addWidget(m_position);
    auto* spacer = new QWidget(toolbar);
    spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    toolbar->addWidget(spacer);
    toolbar->addWidget(m_changes);
    layout->addWidget(toolbar);

    m_source = new QLabel(page);
    m_source->setObjectName(QStringLiteral("blocksSource"));
    m_source->setWordWrap(true);
    layout->addWidget(m_source);

    auto* headers = new QHBoxLayout;
    headers->setSpacing(4);
    headers->addWidget(makeHeader(&m_leftHeader), 1);
    headers->addWidget(makeHeader(&m_rightHeader), 1);
    layout->addLayout(headers);

    auto section = [this, page](QLabel** caption, SideBySideDiffView** diff) {
        auto* w = new QWidget(page);
        auto* v = new QVBoxLayout(w);
        v->setContentsMargins(0, 0, 0, 0);
        v->setSpacing(2);
        *caption = new QLabel(w);
        QFont f = (*caption)->font();
        f.setBold(true);
        (*caption)->setFont(f);
        *diff = new SideBySideDiffView(w);
        v->addWidget(*caption);
        v->addWidget(*diff, 1);
        connect(*diff, &SideBySideDiffView::currentChangeChanged, this, [this] { updateNavigation(); });
        return w;
    };
    m_cudaSection = section(&m_cudaCaption, &m_cudaDiff);
    QWidget* pythonSection = section(&m_pythonCaption, &m_pythonDiff);

    auto* logs = new QWidget(page);
    auto* logLayout = new QGridLayout(logs);
    logLayout->setContentsMargins(0, 0, 0, 0);
    logLayout->setHorizontalSpacing(4);
    logLayout->setVerticalSpacing(2);
    auto* logCaption = new QLabel(tr("Evaluation"), logs);
    QFont bold = logCaption->font();
    bold.setBold(true);
    logCaption->setFont(bold);
    logLayout->addWidget(logCaption, 0, 0, 1, 2);
    for (QPlainTextEdit** log : {&m_leftLog, &m_rightLog}) {
        *log = new QPlainTextEdit(logs);
        (*log)->setReadOnly(true);
        (*log)->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        (*log)->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    }
    m_leftLog->setObjectName(QStringLiteral("leftLog"));
    m_rightLog->setObjectName(QStringLiteral("rightLog"));
    logLayout->addWidget(m_leftLog, 1, 0);
    logLayout->addWidget(m_rightLog, 1, 1);
    logLayout->setColumnStretch(0, 1);
    logLayout->setColumnStretch(1, 1);

    // What each side was asked: a model's answer is read against its prompt (issue 38 item 3).
    m_promptDiff = new SideBySideDiffView(page);
    m_promptDiff->setObjectName(QStringLiteral("promptDiff"));
    m_bottomTabs = new QTabWidget(page);
    m_bottomTabs->setObjectName(QStringLiteral("diffBottomTabs"));
    m_bottomTabs->addTab(logs, tr("Evaluation"));
    m_bottomTabs->addTab(m_promptDiff, tr("Prompts sent"));
    m_kernels = new KernelCompareView(page);
    m_kernels->setObjectName(QStringLiteral("kernelCompare"));
    m_bottomTabs->addTab(m_kernels, tr("Kernels"));
    connect(m_kernels, &KernelCompareView::captionChanged, this,
            [this](const QString& caption) { m_bottomTabs->setTabText(2, caption); });
    // The kernels need room (a table beside two listings): their tab takes most of the height,
    // the code blocks above keep a few lines each; back on another tab the blocks get it again.
    connect(m_bottomTabs, &QTabWidget::currentChanged, this, [this](int index) {
        const int total = m_splitter->height() > 200 ? m_splitter->height() : 700;
        if (index == 2)
            m_splitter->setSizes({total * 22 / 100, total * 13 / 100, total - total * 35 / 100});
        else if (m_kernelsTookRoom)
            m_splitter->setSizes({total * 50 / 100, total * 25 / 100, total - total * 75 / 100});
        m_kernelsTookRoom = index == 2;
    });

    m_splitter = new QSplitter(Qt::Vertical, page);
    m_splitter->addWidget(m_cudaSection);
    m_splitter->addWidget(pythonSection);
    m_splitter->addWidget(m_bottomTabs);
    m_splitter->setStretchFactor(0, 4);
    m_splitter->setStretchFactor(1, 2);
    m_splitter->setStretchFactor(2, 1);
    m_splitter->setChildrenCollapsible(false);
    layout->addWidget(m_splitter, 1);
    m_stack->addWidget(page);

    updateNavigation();
}

QWidget* CandidateDiffView::makeHeader(Header* header)
{
    auto* w = new QWidget(this);
    auto* h = new QHBoxLayout(w);
    h->setContentsMargins(4, 2, 4, 2);
    header->label = new QLabel(w);
    header->label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont f = header->label->font();
    f.setBold(true);
    header->label->setFont(f);
    header->label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    header->status = new QLabel(w);
    header->speedup = new QLabel(w);
    h->addWidget(header->label, 1);
    h->addWidget(header->status);
    h->addWidget(header->speedup);
    return w;
}

void CandidateDiffView::fillHeader(Header* header, const CandidateSide& side)
{
    header->label->setText(side.label.isEmpty() ? tr("(unnamed candidate)") : side.label);
    header->label->setToolTip(side.label);
    const EvaluationStatus status = side.evaluation ? side.evaluation->status : EvaluationStatus::Unknown;
    header->status->setText(side.evaluation ? statusText(*side.evaluation) : tr("not evaluated"));
    header->status->setToolTip(side.evaluation ? categoryLabel(statusCategory(status)) : QString());
    header->status->setStyleSheet(QStringLiteral("QLabel { color: white; background: %1; border-radius: 3px; "
                                                 "padding: 1px 6px; }")
                                      .arg(statusColourName(status)));
    const bool timed = side.evaluation && side.evaluation->speedup;
    header->speedup->setText(timed ? tr("%1 vs eager").arg(formatSpeedup(*side.evaluation)) : tr("no timing"));
    header->speedup->setToolTip(timed && side.evaluation->timing.interval ? tr("the speed-up and its 95 % interval")
                                                                          : QString());
}

void CandidateDiffView::setCandidates(const CandidateSide& left, const CandidateSide& right)
{
    m_hasCandidates = true;
    fillHeader(&m_leftHeader, left);
    fillHeader(&m_rightHeader, right);

    // The worker's blocks where both sides have them; else the whole answers, said so.
    m_answers = !left.blocks || !right.blocks;
    const QString leftCuda = m_answers ? left.answer : left.blocks->cuda;
    const QString rightCuda = m_answers ? right.answer : right.blocks->cuda;
    const QString leftPython = m_answers ? QString() : left.blocks->python;
    const QString rightPython = m_answers ? QString() : right.blocks->python;
    m_cudaDiff->setTexts(leftCuda, rightCuda, m_answers ? Language::Markdown : Language::Cuda);
    m_pythonDiff->setTexts(leftPython, rightPython, Language::Python);
    if (m_answers) {
        QStringList why;
        if (!left.blocks)
            why << tr("left: %1").arg(whyNoBlocks(left));
        if (!right.blocks)
            why << tr("right: %1").arg(whyNoBlocks(right));
        m_source->setText(tr("No parse by the worker is stored for %1 (%2), so the whole answers are compared, "
                             "not the blocks the worker evaluated.")
                              .arg(left.blocks    ? tr("the right candidate")
                                   : right.blocks ? tr("the left candidate")
                                                  : tr("either candidate"),
                                   why.join(QStringLiteral("; "))));
    } else {
        m_source->setText(tr("The cuda and python blocks as the worker parsed them from each answer and evaluated "
                             "them (its candidate echo)."));
    }
    auto caption = [](const QString& name, const SideBySideDiffView* diff, bool leftHas, bool rightHas) {
        if (!leftHas && !rightHas)
            return QStringLiteral("%1: neither candidate has one").arg(name);
        QString text = QStringLiteral("%1: %2").arg(name, diff->changeCount() == 0
                                                              ? QStringLiteral("identical")
                                                              : plural(diff->changeCount(), "change", "changes"));
        if (!leftHas)
            text += QStringLiteral(" (none on the left)");
        else if (!rightHas)
            text += QStringLiteral(" (none on the right)");
        return text;
    };
    const bool anyCuda = !leftCuda.isEmpty() || !rightCuda.isEmpty();
    // In KernelBench's format the CUDA sits inside the module (load_inline), so no CUDA block is no
    // sign of a torch-only answer, and the module is Python, not TorchScript.
    const auto kernelBench = [](const CandidateSide& side) {
        return side.evaluation && side.evaluation->isKernelBenchFormat();
    };
    const bool anyKernelBench = kernelBench(left) || kernelBench(right);
    const QString noCudaWhy = anyKernelBench ? tr(" (KernelBench's format: the CUDA is in the module, below)")
                                             : tr(" (torch-only candidates)");
    m_cudaCaption->setText(caption(m_answers ? tr("Answer (Markdown)") : tr("CUDA block"), m_cudaDiff,
                                   !leftCuda.isEmpty(), !rightCuda.isEmpty()) +
                           (anyCuda || m_answers ? QString() : noCudaWhy));
    m_cudaDiff->setVisible(anyCuda);
    const bool anyPython = !leftPython.isEmpty() || !rightPython.isEmpty();
    m_pythonCaption->setText(m_answers ? tr("Python block: see the answers above")
                                       : caption(anyKernelBench ? tr("Module (KernelBench's format, load_inline)")
                                                                : tr("Python block (TorchScript)"),
                                                 m_pythonDiff, !leftPython.isEmpty(), !rightPython.isEmpty()));
    m_pythonDiff->setVisible(anyPython);

    m_leftLog->setPlainText(CandidateSide::evaluationReport(left.evaluation));
    m_rightLog->setPlainText(CandidateSide::evaluationReport(right.evaluation));
    m_promptDiff->setTexts(left.prompts, right.prompts, Language::Markdown);
    auto facts = [](const CandidateSide& side) {
        return side.evaluation && side.evaluation->compile ? side.evaluation->compile->kernelFacts
                                                           : QList<KernelFactsInfo>();
    };
    auto factsNote = [](const CandidateSide& side) {
        return side.evaluation && side.evaluation->compile ? side.evaluation->compile->kernelFactsNote : QString();
    };
    auto launches = [](const CandidateSide& side) {
        return side.evaluation ? side.evaluation->launches : QList<KernelLaunchConfig>();
    };
    m_kernels->setKernels(facts(left), factsNote(left), facts(right), factsNote(right), launches(left),
                          launches(right));
    auto traffic = [](const CandidateSide& side) {
        return side.evaluation && side.evaluation->traffic ? side.evaluation->traffic->perKernel
                                                           : QList<KernelTraffic>();
    };
    m_kernels->setTraffic(traffic(left), traffic(right));
    m_bottomTabs->setTabText(
        1, left.prompts.isEmpty() && right.prompts.isEmpty() ? tr("Prompts sent")
           : m_promptDiff->changeCount() == 0
               ? tr("Prompts sent: identical")
               : tr("Prompts sent: %1").arg(plural(m_promptDiff->changeCount(), "change", "changes")));

    // Room by need: each block as tall as its rows where both fit, else the shorter one whole
    // (up to 45 %) and the longer one the rest; the logs take what is left, at least a few lines.
    const int line = m_cudaDiff->leftEditor()->fontMetrics().lineSpacing();
    auto need = [line](bool shown, int rows) { return shown ? (rows + 3) * line : 2 * line; };
    const int total = m_splitter->height() > 200 ? m_splitter->height() : 700;
    const int logsMin = qMin(total / 4, 8 * line);
    const int room = total - logsMin;
    int cudaHeight = need(anyCuda, int(m_cudaDiff->diff().rows.size()));
    int pythonHeight = need(anyPython, int(m_pythonDiff->diff().rows.size()));
    if (cudaHeight + pythonHeight > room) {
        if (cudaHeight <= pythonHeight) {
            cudaHeight = qMin(cudaHeight, room * 45 / 100);
            pythonHeight = room - cudaHeight;
        } else {
            pythonHeight = qMin(pythonHeight, room * 45 / 100);
            cudaHeight = room - pythonHeight;
        }
    }
    m_splitter->setSizes({cudaHeight, pythonHeight, total - cudaHeight - pythonHeight});

    m_stack->setCurrentIndex(1);
    m_current = -1;
    setCurrentChange(changeCount() > 0 ? 0 : -1);
}

void CandidateDiffView::clear()
{
    m_hasCandidates = false;
    m_answers = false;
    m_source->clear();
    m_cudaDiff->clear();
    m_pythonDiff->clear();
    m_promptDiff->clear();
    m_kernels->clear();
    m_bottomTabs->setTabText(1, tr("Prompts sent"));
    m_leftLog->clear();
    m_rightLog->clear();
    m_current = -1;
    m_stack->setCurrentIndex(0);
    updateNavigation();
}

void CandidateDiffView::showBottomTab(int index)
{
    m_bottomTabs->setCurrentIndex(index);
}

bool CandidateDiffView::hasCandidates() const
{
    return m_hasCandidates;
}

int CandidateDiffView::changeCount() const
{
    return m_cudaDiff->changeCount() + m_pythonDiff->changeCount();
}

bool CandidateDiffView::setCurrentChange(int index)
{
    if (index < -1 || index >= changeCount())
        return false;
    m_current = index;
    const int cudaChanges = m_cudaDiff->changeCount();
    m_cudaDiff->setCurrentChange(index >= 0 && index < cudaChanges ? index : -1);
    m_pythonDiff->setCurrentChange(index >= cudaChanges ? index - cudaChanges : -1);
    updateNavigation();
    Q_EMIT currentChangeChanged(m_current, changeCount());
    return true;
}

bool CandidateDiffView::nextChange()
{
    return m_current + 1 < changeCount() && setCurrentChange(m_current + 1);
}

bool CandidateDiffView::previousChange()
{
    return m_current > 0 && setCurrentChange(m_current - 1);
}

QString CandidateDiffView::sourceNote() const
{
    return m_source->text();
}

QString CandidateDiffView::changeSummary() const
{
    return m_changes->text();
}

void CandidateDiffView::updateNavigation()
{
    const int count = changeCount();
    m_changes->setText(m_hasCandidates ? tr("changes: %1").arg(count) : QString());
    if (!m_hasCandidates)
        m_position->clear();
    else if (count == 0)
        m_position->setText(tr("the candidates' code is identical"));
    else if (m_current < 0)
        m_position->setText(tr("%1 changes").arg(count));
    else
        m_position->setText(tr("change %1 of %2 (%3)")
                                .arg(m_current + 1)
                                .arg(count)
                                .arg(m_current >= m_cudaDiff->changeCount() ? tr("Python")
                                     : m_answers                            ? tr("answer")
                                                                            : tr("CUDA")));
    m_previous->setEnabled(m_hasCandidates && m_current > 0);
    m_next->setEnabled(m_hasCandidates && m_current + 1 < count);
}

} // namespace kwb::app

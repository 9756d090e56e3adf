#include "app/editor/candidatediffview.h"

#include "app/editor/codeeditor.h"
#include "core/protocol/evaluationstatus.h"
#include "app/editor/sidebysidediffview.h"

#include <QAction>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSplitter>
#include <QStackedWidget>
#include <QToolBar>
#include <QVBoxLayout>

namespace kwb::app {

namespace {

QString number(const QJsonValue& v)
{
    if (v.isDouble())
        return QString::number(v.toDouble(), 'g', 4);
    if (v.isString())
        return v.toString();
    return QStringLiteral("?");
}

/// The status table's colour (core/protocol/evaluationstatus.h), for rich text.
QString statusColourText(const QString& status)
{
    return statusColourName(evaluationStatusFromWire(status));
}

QString plural(int n, const char* one, const char* many)
{
    return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? one : many));
}

} // namespace

QString fencedBlock(const QString& markdown, const QString& tag)
{
    static const QRegularExpression open(QStringLiteral("^\\s*(`{3,}|~{3,})\\s*([^\\s`]*)"));
    const QStringList lines = markdown.split(QLatin1Char('\n'));
    for (int i = 0; i < lines.size(); ++i) {
        const QRegularExpressionMatch m = open.match(lines.at(i));
        if (!m.hasMatch())
            continue;
        const QString fence = m.captured(1);
        const QString blockTag = m.captured(2).toLower();
        QStringList body;
        int j = i + 1;
        for (; j < lines.size(); ++j) {
            const QString t = lines.at(j).trimmed();
            if (t.size() >= fence.size() && t == QString(t.size(), fence.at(0)))
                break;
            body << lines.at(j);
        }
        QString code = body.join(QLatin1Char('\n'));
        if (code.endsWith(QLatin1Char('\r')))
            code.chop(1);
        if (blockTag == tag.toLower())
            return code;
        // An answer wrapped in ````markdown counts as Markdown (docs/candidate-format.md).
        if (blockTag == QLatin1String("markdown") || blockTag == QLatin1String("md")) {
            const QString inner = fencedBlock(code, tag);
            if (!inner.isEmpty())
                return inner;
        }
        i = j;
    }
    return {};
}

CandidateSide CandidateSide::fromAnswer(const QString& label, const QString& answer, const QJsonObject& evaluation)
{
    CandidateSide side;
    side.label = label;
    side.cuda = fencedBlock(answer, QStringLiteral("cuda"));
    side.python = fencedBlock(answer, QStringLiteral("python"));
    side.status = evaluation.value(QLatin1String("status")).toString();
    const QJsonValue speedup = evaluation.value(QLatin1String("speedup"));
    if (speedup.isDouble())
        side.speedup = speedup.toDouble();
    side.evaluation = evaluation;
    return side;
}

QString CandidateSide::evaluationReport(const QJsonObject& e)
{
    if (e.isEmpty())
        return QStringLiteral("Not evaluated: no evaluation is stored for this candidate.");
    QStringList out;
    const QString status = e.value(QLatin1String("status")).toString();
    const QString stage = e.value(QLatin1String("stage")).toString();
    out << (stage.isEmpty() ? QStringLiteral("status: %1").arg(status)
                            : QStringLiteral("status: %1 (stopped at: %2)").arg(status, stage));
    const QString message = e.value(QLatin1String("message")).toString().trimmed();
    if (!message.isEmpty())
        out << QStringLiteral("message: %1").arg(message);
    const QJsonObject error = e.value(QLatin1String("error")).toObject();
    if (!error.isEmpty())
        out << QStringLiteral("error: %1 %2")
                   .arg(error.value(QLatin1String("code")).toString(), error.value(QLatin1String("message")).toString())
                   .trimmed();

    const QJsonObject format = e.value(QLatin1String("format_error")).toObject();
    if (!format.isEmpty()) {
        QString line = QStringLiteral("format error: %1").arg(format.value(QLatin1String("code")).toString());
        if (format.value(QLatin1String("line")).toInt() > 0)
            line += QStringLiteral(" (answer line %1)").arg(format.value(QLatin1String("line")).toInt());
        const QString what = format.value(QLatin1String("message")).toString();
        if (!what.isEmpty() && what != message)
            line += QStringLiteral(": ") + what;
        out << line;
    }

    const QJsonObject compile = e.value(QLatin1String("compile")).toObject();
    const QString log = compile.value(QLatin1String("log")).toString().trimmed();
    if (!log.isEmpty()) {
        const QString arch = compile.value(QLatin1String("arch")).toString();
        out << QString()
            << (arch.isEmpty() ? QStringLiteral("compile log (NVRTC):")
                               : QStringLiteral("compile log (NVRTC, %1):").arg(arch));
        out << log;
    } else if (compile.contains(QLatin1String("ok")) && !compile.value(QLatin1String("ok")).toBool()) {
        out << QStringLiteral("compile: failed, no log");
    }

    const QJsonObject correctness = e.value(QLatin1String("correctness")).toObject();
    if (!correctness.isEmpty()) {
        out << QString()
            << QStringLiteral(
                   "correctness: passed %1 of %2 trials; max abs diff %3 (atol %4), max rel diff %5 (rtol %6)")
                   .arg(number(correctness.value(QLatin1String("passed"))),
                        number(correctness.value(QLatin1String("trials"))),
                        number(correctness.value(QLatin1String("max_abs_diff"))),
                        number(correctness.value(QLatin1String("atol"))),
                        number(correctness.value(QLatin1String("max_rel_diff"))),
                        number(correctness.value(QLatin1String("rtol"))));
        const QJsonObject failure = correctness.value(QLatin1String("failure")).toObject();
        if (!failure.isEmpty()) {
            const QJsonValue trial = failure.value(QLatin1String("trial"));
            const QString which = trial.isDouble() ? QString::number(trial.toInt() + 1) : trial.toString();
            out << QStringLiteral("failure (trial %1): %2")
                       .arg(which, failure.value(QLatin1String("reason")).toString());
            const QJsonValue detail = failure.value(QLatin1String("detail"));
            if (detail.isObject())
                out << QStringLiteral("detail: %1")
                           .arg(QString::fromUtf8(QJsonDocument(detail.toObject()).toJson(QJsonDocument::Compact)));
            else if (!detail.isNull() && !detail.isUndefined())
                out << QStringLiteral("detail: %1").arg(detail.toVariant().toString());
        }
    }
    const QJsonObject degenerate = e.value(QLatin1String("degenerate")).toObject();
    if (!degenerate.isEmpty())
        out << QStringLiteral("degenerate reference (%1): %2")
                   .arg(degenerate.value(QLatin1String("kind")).toString(),
                        degenerate.value(QLatin1String("message")).toString());

    const QJsonObject timing = e.value(QLatin1String("timing")).toObject();
    if (!timing.isEmpty()) {
        const QJsonObject cand = timing.value(QLatin1String("candidate")).toObject();
        const QJsonObject ref = timing.value(QLatin1String("reference")).toObject();
        out << QString()
            << QStringLiteral("timing (mean): candidate %1 ms, reference %2 ms")
                   .arg(number(cand.value(QLatin1String("mean_ms"))), number(ref.value(QLatin1String("mean_ms"))));
    }
    const QJsonValue speedup = e.value(QLatin1String("speedup"));
    if (speedup.isDouble())
        out << QStringLiteral("speedup: %1×").arg(QString::number(speedup.toDouble(), 'f', 2));
    if (e.value(QLatin1String("torch_only")).toBool())
        out << QStringLiteral("torch only: no custom kernel ran");
    const QString stderrTail = e.value(QLatin1String("log")).toString().trimmed();
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

    m_empty = new QLabel(tr("No candidates to compare.\nPick two candidates of a run (Runs page) to see their "
                            "code side by side."),
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

    m_splitter = new QSplitter(Qt::Vertical, page);
    m_splitter->addWidget(m_cudaSection);
    m_splitter->addWidget(pythonSection);
    m_splitter->addWidget(logs);
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
    const QString status = side.status.isEmpty() ? tr("not evaluated") : side.status;
    header->status->setText(status);
    header->status->setStyleSheet(QStringLiteral("QLabel { color: white; background: %1; border-radius: 3px; "
                                                 "padding: 1px 6px; }")
                                      .arg(statusColourText(side.status)));
    header->speedup->setText(side.speedup ? QStringLiteral("%1× vs eager").arg(QString::number(*side.speedup, 'f', 2))
                                          : tr("no timing"));
}

void CandidateDiffView::setCandidates(const CandidateSide& left, const CandidateSide& right)
{
    m_hasCandidates = true;
    fillHeader(&m_leftHeader, left);
    fillHeader(&m_rightHeader, right);

    m_cudaDiff->setTexts(left.cuda, right.cuda, Language::Cuda);
    m_pythonDiff->setTexts(left.python, right.python, Language::Python);
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
    const bool anyCuda = !left.cuda.isEmpty() || !right.cuda.isEmpty();
    m_cudaCaption->setText(caption(tr("CUDA block"), m_cudaDiff, !left.cuda.isEmpty(), !right.cuda.isEmpty()) +
                           (anyCuda ? QString() : tr(" (torch-only candidates)")));
    m_cudaDiff->setVisible(anyCuda);
    const bool anyPython = !left.python.isEmpty() || !right.python.isEmpty();
    m_pythonCaption->setText(
        caption(tr("Python block (TorchScript)"), m_pythonDiff, !left.python.isEmpty(), !right.python.isEmpty()));
    m_pythonDiff->setVisible(anyPython);

    m_leftLog->setPlainText(CandidateSide::evaluationReport(left.evaluation));
    m_rightLog->setPlainText(CandidateSide::evaluationReport(right.evaluation));

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
    m_cudaDiff->clear();
    m_pythonDiff->clear();
    m_leftLog->clear();
    m_rightLog->clear();
    m_current = -1;
    m_stack->setCurrentIndex(0);
    updateNavigation();
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
                                .arg(m_current < m_cudaDiff->changeCount() ? tr("CUDA") : tr("Python")));
    m_previous->setEnabled(m_hasCandidates && m_current > 0);
    m_next->setEnabled(m_hasCandidates && m_current + 1 < count);
}

} // namespace kwb::app

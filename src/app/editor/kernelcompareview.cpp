#include "app/editor/kernelcompareview.h"

#include "app/editor/sidebysidediffview.h"
#include "app/editor/syntaxhighlighting.h"
#include "core/tasks/kernelwork.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace kwb::app {

namespace {

QString plural(qsizetype n, const char* one, const char* many)
{
    return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? one : many));
}

// Amber: a fact that differs is neither good nor bad by itself (more registers can be faster).
QColor differColour(bool dark)
{
    return dark ? QColor(0x5a, 0x48, 0x12) : QColor(0xff, 0xf1, 0xb8);
}

} // namespace

KernelCompareView::KernelCompareView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(3);

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Kernel:"), this));
    m_chooser = new QComboBox(this);
    m_chooser->setObjectName(QStringLiteral("kernelChooser"));
    m_chooser->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    bar->addWidget(m_chooser, 1);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Code:"), this));
    m_codeKind = new QComboBox(this);
    m_codeKind->setObjectName(QStringLiteral("kernelCodeKind"));
    m_codeKind->addItems({tr("SASS"), tr("PTX")});
    bar->addWidget(m_codeKind);
    layout->addLayout(bar);

    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("kernelFactsNote"));
    m_note->setWordWrap(true);
    layout->addWidget(m_note);

    auto* readings = new QHBoxLayout;
    for (QLabel** reading : {&m_leftReading, &m_rightReading}) {
        *reading = new QLabel(this);
        (*reading)->setWordWrap(true);
        (*reading)->setTextInteractionFlags(Qt::TextSelectableByMouse);
        readings->addWidget(*reading, 1);
    }
    m_leftReading->setObjectName(QStringLiteral("leftKernelReading"));
    m_rightReading->setObjectName(QStringLiteral("rightKernelReading"));
    layout->addLayout(readings);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    m_table = new QTableWidget(0, 3, splitter);
    m_table->setObjectName(QStringLiteral("kernelFactsTable"));
    m_table->setHorizontalHeaderLabels({tr("Fact"), tr("Left"), tr("Right")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);

    auto* code = new QWidget(splitter);
    auto* codeLayout = new QVBoxLayout(code);
    codeLayout->setContentsMargins(0, 0, 0, 0);
    codeLayout->setSpacing(2);
    m_codeCaption = new QLabel(code);
    m_codeCaption->setObjectName(QStringLiteral("kernelCodeCaption"));
    m_code = new SideBySideDiffView(code);
    m_code->setObjectName(QStringLiteral("kernelCodeDiff"));
    codeLayout->addWidget(m_codeCaption);
    codeLayout->addWidget(m_code, 1);
    splitter->addWidget(m_table);
    splitter->addWidget(code);
    // The table whole (three columns) beside the listings, which take the rest.
    m_table->setMinimumWidth(fontMetrics().horizontalAdvance(QLatin1Char('x')) * 64);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    layout->addWidget(splitter, 1);

    connect(m_chooser, &QComboBox::currentIndexChanged, this, [this] { showKernel(); });
    connect(m_codeKind, &QComboBox::currentIndexChanged, this, [this] { showCode(); });
    clear();
}

void KernelCompareView::setKernels(const QList<KernelFactsInfo>& left, const QString& leftNote,
                                   const QList<KernelFactsInfo>& right, const QString& rightNote,
                                   const QList<KernelLaunchConfig>& leftLaunches,
                                   const QList<KernelLaunchConfig>& rightLaunches)
{
    m_left = left;
    m_right = right;
    m_leftLaunches = leftLaunches;
    m_rightLaunches = rightLaunches;
    m_leftTraffic.clear();
    m_rightTraffic.clear();
    m_leftNote = leftNote;
    m_rightNote = rightNote;
    m_names.clear();
    for (const auto* side : {&m_left, &m_right})
        for (const KernelFactsInfo& k : *side)
            if (!m_names.contains(k.name))
                m_names << k.name;
    QStringList notes;
    if (!leftNote.isEmpty())
        notes << tr("left: %1").arg(leftNote);
    if (!rightNote.isEmpty())
        notes << tr("right: %1").arg(rightNote);
    if (m_names.isEmpty())
        notes.prepend(tr("Neither candidate has kernel facts (not compiled, torch-only, or evaluated by a worker "
                         "before issue 40)."));
    m_note->setText(notes.join(QStringLiteral("; ")));
    m_note->setVisible(!notes.isEmpty());

    // SASS where either side has any: it is what ran; PTX otherwise.
    bool anySass = false;
    for (const auto* side : {&m_left, &m_right})
        for (const KernelFactsInfo& k : *side)
            anySass = anySass || k.sass.has_value();
    {
        const QSignalBlocker block(m_codeKind);
        m_codeKind->setCurrentIndex(anySass ? 0 : 1);
    }
    {
        const QSignalBlocker block(m_chooser);
        m_chooser->clear();
        for (const QString& name : m_names) {
            const KernelFactsInfo* l = findKernel(m_left, name);
            const KernelFactsInfo* r = findKernel(m_right, name);
            QString text = (l ? l : r)->displayName();
            if (!l)
                text += tr("  (right only)");
            else if (!r)
                text += tr("  (left only)");
            m_chooser->addItem(text, name);
        }
    }
    m_chooser->setEnabled(!m_names.isEmpty());
    showKernel();
}

void KernelCompareView::setTraffic(const QList<KernelTraffic>& left, const QList<KernelTraffic>& right)
{
    m_leftTraffic = left;
    m_rightTraffic = right;
    showKernel();
}

void KernelCompareView::clear()
{
    setKernels({}, {}, {}, {});
}

bool KernelCompareView::setCurrentKernel(const QString& name)
{
    const int i = m_chooser->findData(name);
    if (i < 0)
        return false;
    m_chooser->setCurrentIndex(i);
    showKernel();
    return true;
}

QString KernelCompareView::currentKernel() const
{
    return m_chooser->currentData().toString();
}

void KernelCompareView::setShowSass(bool sass)
{
    m_codeKind->setCurrentIndex(sass ? 0 : 1);
}

bool KernelCompareView::showsSass() const
{
    return m_codeKind->currentIndex() == 0;
}

void KernelCompareView::showKernel()
{
    const QString name = currentKernel();
    const KernelFactsInfo* l = findKernel(m_left, name);
    const KernelFactsInfo* r = findKernel(m_right, name);
    QStringList labels = kernelFactLabels();
    QList<KernelFactRow> leftRows = l ? kernelFactRows(*l) : QList<KernelFactRow>();
    QList<KernelFactRow> rightRows = r ? kernelFactRows(*r) : QList<KernelFactRow>();
    // As the GPU ran it, where either side was traced: its longest-running launch.
    if (!m_leftLaunches.isEmpty() || !m_rightLaunches.isEmpty()) {
        // Not its time: two runs of the same kernel differ in it, and every pair would "differ".
        const QStringList launchLabels{tr("Launch (as run)"), tr("Theoretical occupancy")};
        const auto launchRows = [&](const KernelFactsInfo* k, const QList<KernelLaunchConfig>& launches) {
            const QList<KernelLaunchConfig> mine = k ? launchesOf(launches, *k) : QList<KernelLaunchConfig>();
            QList<KernelFactRow> rows;
            if (mine.isEmpty()) {
                const QString none = launches.isEmpty() ? tr("(not traced)") : tr("(not launched)");
                for (const QString& label : launchLabels)
                    rows.append(KernelFactRow{label, none});
                return rows;
            }
            const KernelLaunchConfig& first = mine.front();
            const QString more = mine.size() > 1 ? tr(" (+%1 more)").arg(mine.size() - 1) : QString();
            rows.append(KernelFactRow{launchLabels[0], launchShapeText(first) + more});
            rows.append(KernelFactRow{launchLabels[1], occupancyText(first.occupancy)});
            return rows;
        };
        labels << launchLabels;
        if (l)
            leftRows << launchRows(l, m_leftLaunches);
        if (r)
            rightRows << launchRows(r, m_rightLaunches);
    }
    // Bytes, not bandwidth: the bytes a kernel moves repeat from run to run, its time does not.
    if (!m_leftTraffic.isEmpty() || !m_rightTraffic.isEmpty()) {
        const QString label = tr("HBM traffic (measured)");
        const auto trafficRow = [&](const KernelFactsInfo& k, const QList<KernelTraffic>& traffic) {
            if (traffic.isEmpty())
                return KernelFactRow{label, tr("(not counted per kernel)")};
            for (const KernelTraffic& t : traffic)
                if (t.name == k.name || (!k.demangled.isEmpty() && t.name == k.demangled))
                    return KernelFactRow{label, kernelTrafficText(t)};
            return KernelFactRow{label, tr("(not launched)")};
        };
        labels << label;
        if (l)
            leftRows << trafficRow(*l, m_leftTraffic);
        if (r)
            rightRows << trafficRow(*r, m_rightTraffic);
    }
    const QColor differ = differColour(isDarkPalette(palette()));
    m_table->setRowCount(name.isEmpty() ? 0 : int(labels.size()));
    for (int i = 0; !name.isEmpty() && i < labels.size(); ++i) {
        const QString lv = l ? leftRows[i].value : tr("(no such kernel)");
        const QString rv = r ? rightRows[i].value : tr("(no such kernel)");
        const bool differs = lv != rv;
        const QStringList cells{labels[i], lv, rv};
        for (int c = 0; c < 3; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            // The whole value too: a narrow column elides the long ones (launch, traffic).
            QString tip = c == 0 ? QString() : cells[c];
            if (differs) {
                item->setBackground(differ);
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
                tip += (tip.isEmpty() ? QString() : QStringLiteral("\n")) + tr("differs between the candidates");
            }
            item->setToolTip(tip);
            m_table->setItem(i, c, item);
        }
    }
    m_leftReading->setText(l                ? tr("Left: %1").arg(kernelReading(*l))
                           : name.isEmpty() ? QString()
                                            : tr("Left: no such kernel"));
    m_rightReading->setText(r                ? tr("Right: %1").arg(kernelReading(*r))
                            : name.isEmpty() ? QString()
                                             : tr("Right: no such kernel"));
    showCode();
    Q_EMIT captionChanged(caption());
}

void KernelCompareView::showCode()
{
    const QString name = currentKernel();
    const KernelFactsInfo* l = findKernel(m_left, name);
    const KernelFactsInfo* r = findKernel(m_right, name);
    const bool sass = showsSass();
    const QString kind = sass ? tr("SASS") : tr("PTX");
    auto text = [&](const KernelFactsInfo* k) -> QString {
        if (!k)
            return QString();
        const std::optional<QString>& t = sass ? k->sass : k->ptx;
        return t ? *t : QString();
    };
    auto why = [&](const KernelFactsInfo* k) -> QString {
        if (!k)
            return tr("no such kernel");
        const std::optional<QString>& t = sass ? k->sass : k->ptx;
        const QString note = sass ? k->sassNote : k->ptxNote;
        return t ? note : (note.isEmpty() ? tr("none") : note);
    };
    m_code->setTexts(text(l), text(r), Language::Plain);
    if (name.isEmpty()) {
        m_codeCaption->setText(QString());
        return;
    }
    QString caption = m_code->changeCount() == 0
                          ? tr("%1: identical").arg(kind)
                          : tr("%1: %2").arg(kind, plural(m_code->changeCount(), "change", "changes"));
    QStringList notes;
    if (const QString w = why(l); !w.isEmpty())
        notes << tr("left: %1").arg(w);
    if (const QString w = why(r); !w.isEmpty())
        notes << tr("right: %1").arg(w);
    if (!notes.isEmpty())
        caption += QStringLiteral(" (") + notes.join(QStringLiteral("; ")) + QLatin1Char(')');
    m_codeCaption->setText(caption);
    m_codeCaption->setToolTip(caption);
}

QStringList KernelCompareView::differingFacts() const
{
    QStringList out;
    for (int i = 0; i < m_table->rowCount(); ++i)
        if (m_table->item(i, 1)->text() != m_table->item(i, 2)->text())
            out << m_table->item(i, 0)->text();
    return out;
}

QString KernelCompareView::caption() const
{
    if (m_names.isEmpty())
        return tr("Kernels: none");
    const qsizetype differ = differingFacts().size();
    return tr("Kernels: %1, %2")
        .arg(plural(m_names.size(), "kernel", "kernels"),
             differ == 0 ? tr("facts alike") : plural(differ, "fact differs", "facts differ"));
}

} // namespace kwb::app

#include "app/charts/rooflinepage.h"

#include "app/charts/chartformat.h"

#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include <algorithm>

namespace kwb::app {

namespace {
const QString kStudyKey = QStringLiteral("v100-sxm2-32gb");
} // namespace

RooflinePage::RooflinePage(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("rooflinePage"));
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    auto* label = new QLabel(QStringLiteral("&GPU:"), this);
    m_gpuCombo = new GpuChooser(kStudyKey, this);
    label->setBuddy(m_gpuCombo);
    bar->addWidget(label);
    bar->addWidget(m_gpuCombo);
    // 250 tasks on one chart: find one by name, or name them all where they fit.
    auto* findLabel = new QLabel(tr("&Task:"), this);
    m_find = new QComboBox(this);
    m_find->setObjectName(QStringLiteral("findTask"));
    m_find->setEditable(true);
    m_find->setInsertPolicy(QComboBox::NoInsert);
    m_find->setMinimumContentsLength(8);
    m_find->lineEdit()->setPlaceholderText(tr("find…"));
    m_find->completer()->setCompletionMode(QCompleter::PopupCompletion);
    m_find->completer()->setFilterMode(Qt::MatchContains);
    m_find->setToolTip(tr("Select a task: a ring on its markers and its numbers beside them"));
    findLabel->setBuddy(m_find);
    bar->addSpacing(12);
    bar->addWidget(findLabel);
    bar->addWidget(m_find);
    m_labels = new QCheckBox(tr("&Label tasks"), this);
    m_labels->setObjectName(QStringLiteral("labelTasks"));
    m_labels->setToolTip(tr("Name each task beside its eager reference; names that would overlap are left out "
                            "until you zoom in"));
    bar->addWidget(m_labels);
    bar->addStretch(1);
    auto* resetZoom = new QPushButton(tr("Reset zoom"), this);
    resetZoom->setObjectName(QStringLiteral("resetZoom"));
    resetZoom->setToolTip(
        tr("Show every point and roof again (drag a rectangle or turn the wheel on the chart to zoom)"));
    bar->addWidget(resetZoom);
    layout->addLayout(bar);

    m_chart = new RooflineChart(this);
    connect(resetZoom, &QPushButton::clicked, m_chart, &RooflineChart::resetZoom);
    // The legend in a column on the right: in a row under the chart, six entries naming their
    // placement ("L1 eager reference (analytic …)") were cut off at 1440 px.
    m_chart->chart()->legend()->setAlignment(Qt::AlignRight);
    layout->addWidget(m_chart, 1);

    auto* selectionRow = new QHBoxLayout;
    m_selection = new QLabel(this);
    m_selection->setObjectName(QStringLiteral("rooflineSelection"));
    m_selection->setWordWrap(true);
    m_selection->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_open = new QPushButton(tr("Open task"), this);
    m_open->setObjectName(QStringLiteral("openTask"));
    m_open->setToolTip(tr("Show the selected task on the Tasks page (or double-click its point)"));
    selectionRow->addWidget(m_selection, 1);
    selectionRow->addWidget(m_open);
    layout->addLayout(selectionRow);

    m_help = new QLabel(this);
    m_help->setObjectName(QStringLiteral("rooflineHelp"));
    m_help->setWordWrap(true);
    m_help->setTextFormat(Qt::RichText);
    m_help->setContentsMargins(4, 2, 4, 2);
    layout->addWidget(m_help);

    connect(m_gpuCombo, &GpuChooser::roofsChanged, this, [this](const GpuRoofs& roofs) {
        m_chart->setRoofs(roofs);
        showSelection(m_chart->selectedTask()); // its numbers are this GPU's now
        updateHelp();
    });
    connect(m_chart, &RooflineChart::taskActivated, this, &RooflinePage::taskActivated);
    connect(m_chart, &RooflineChart::taskSelected, this, &RooflinePage::showSelection);
    connect(m_chart, &RooflineChart::kernelSelected, this, [this](const QString& task, int) { showSelection(task); });
    connect(m_labels, &QCheckBox::toggled, m_chart, &RooflineChart::setLabelsShown);
    connect(m_find, qOverload<int>(&QComboBox::activated), this,
            [this](int index) { m_chart->selectTask(m_find->itemData(index).toString()); });
    connect(m_open, &QPushButton::clicked, this, [this] {
        if (!m_chart->selectedTask().isEmpty())
            Q_EMIT taskActivated(m_chart->selectedTask());
    });
    showSelection(QString());
    m_chart->setRoofs(m_gpuCombo->selectedRoofs());
    updateHelp();
}

RooflinePage::~RooflinePage() = default;

void RooflinePage::setCurrentDevice(const DeviceFacts& device, const QString& origin)
{
    m_gpuCombo->setCurrentDevice(device, origin);
}

void RooflinePage::setPoints(const QList<RooflinePoint>& points)
{
    m_chart->setPoints(points);
    fillFinder();
    showSelection(m_chart->selectedTask());
    updateHelp();
}

void RooflinePage::fillFinder()
{
    const QSignalBlocker block(m_find);
    m_find->clear();
    for (const RooflinePoint& p : m_chart->points())
        m_find->addItem(p.task, p.task);
    m_find->setCurrentIndex(m_find->findData(m_chart->selectedTask()));
    m_find->setEnabled(m_find->count() > 0);
}

void RooflinePage::showSelection(const QString& task)
{
    {
        const QSignalBlocker block(m_find);
        m_find->setCurrentIndex(m_find->findData(task));
    }
    m_open->setEnabled(!task.isEmpty());
    m_selection->setText(task.isEmpty() ? tr("Click a point to select its task, double-click to open it.")
                                        : m_chart->selectionText());
}

QString RooflinePage::selectionInfo() const
{
    return m_selection->text();
}

bool RooflinePage::selectGpu(const QString& key)
{
    return m_gpuCombo->selectGpu(key);
}

QString RooflinePage::selectedGpuKey() const
{
    return m_gpuCombo->selectedKey();
}

GpuRoofs RooflinePage::selectedRoofs() const
{
    return m_chart->roofs();
}

QString RooflinePage::helpText() const
{
    return m_help->text();
}

void RooflinePage::updateHelp()
{
    // Only what the chart draws now: each sentence names something on it.
    const GpuRoofs& roofs = m_chart->roofs();
    QStringList parts{QStringLiteral("<b>How to read it.</b> Both axes are logarithmic.")};
    if (roofs.isValid()) {
        parts << QStringLiteral(
                     "The solid diagonal is the memory roof (%1) and the solid flat line the FP32 roof (%2); "
                     "they meet at the ridge point (white diamond), on the %3 at %4.")
                     .arg(humanBandwidth(roofs.bandwidthGBps()), humanGflops(roofs.fp32Gflops()),
                          roofs.name.toHtmlEscaped(), intensityText(roofs.fp32RidgeIntensity()));
        parts << QStringLiteral(
            "Left of the ridge point a kernel is memory-bound: it waits on HBM, so fusing the epilogue (bias, "
            "activation, scaling) into one pass that saves HBM traffic pays. Right of it a kernel is compute-bound: "
            "cuBLAS and cuDNN already run it near the FP32 roof, so re-implementing them does not.");
        bool tensor = false;
        for (const Roof& r : roofs.roofs)
            tensor = tensor || r.isTensor();
        if (tensor)
            parts << QStringLiteral("The dashed flat lines are tensor-core roofs (the dashed diagonal leads to them): "
                                    "they bound only kernels that run on tensor cores; the study's fp32 kernels "
                                    "(TF32 off) are bound by the FP32 roof.");
        if (roofs.roofsOf(Roof::Kind::Memory).size() > 1 || roofs.roofsOf(Roof::Kind::Fp32).size() > 1)
            parts << QStringLiteral("Dotted lines are theoretical roofs beside the measured ones (named at the "
                                    "plot's bottom left).");
    }
    const QList<RooflineMarker>& markers = m_chart->markers();
    const auto any = [&markers](auto test) { return std::any_of(markers.cbegin(), markers.cend(), test); };
    if (!markers.isEmpty()) {
        parts << QStringLiteral("Shapes are levels (circle L1, square L2, triangle L3).");
        if (any([](const RooflineMarker& m) { return m.measured; }))
            parts << QStringLiteral("Measured on this GPU: each task's eager reference is a hollow grey marker and "
                                    "its best counted candidate a filled green one, joined by an arrow (green when "
                                    "faster, red when slower).");
        if (any([](const RooflineMarker& m) { return m.basis == IntensityBasis::Measured; }))
            parts << QStringLiteral("A dark ring: a candidate placed by its measured HBM traffic.");
        if (any([](const RooflineMarker& m) { return !m.measured; }))
            parts << QStringLiteral("Times are drawn only against the GPU they were measured on: on this GPU's "
                                    "roofs those tasks are placed analytically, on the roof at their intensity "
                                    "(hollow markers with dotted outlines, dashed arrows; no time rescaled).");
        if (any([](const RooflineMarker& m) { return m.role == RooflineMarker::Role::NotCounted; }))
            parts << QStringLiteral("A red star is a time below the roofline floor: physically impossible, so not "
                                    "counted anywhere.");
        if (std::any_of(m_chart->points().cbegin(), m_chart->points().cend(), [this](const RooflinePoint& p) {
                return !p.kernels.isEmpty() && m_chart->drawsMeasured(p.measuredOn);
            }))
            parts << QStringLiteral("Select a task to see its best candidate's kernels as purple pentagons, each at "
                                    "its own work and time (library kernels together); click one for its reading: "
                                    "how bound it is, its spills and occupancy.");
        if (m_chart->isDense())
            parts << QStringLiteral("With %1 tasks the markers are small and half transparent: a darker patch is "
                                    "many tasks.")
                         .arg(m_chart->points().size());
        parts << QStringLiteral("Hover a point for its numbers, click it to select its task, pick one under Task, or "
                                "Label tasks; drag or turn the wheel to zoom.");
    }
    m_help->setText(parts.join(QLatin1Char(' ')));
}

} // namespace kwb::app

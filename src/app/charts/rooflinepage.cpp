#include "app/charts/rooflinepage.h"

#include "app/charts/chartformat.h"

#include <QChart>
#include <QComboBox>
#include <QLegend>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace kwb::app {

namespace {
const QString kCurrentKey = QStringLiteral("current");
const QString kStudyKey = QStringLiteral("v100-sxm2-32gb");
} // namespace

RooflinePage::RooflinePage(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("rooflinePage"));
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    auto* label = new QLabel(QStringLiteral("&GPU:"), this);
    m_gpuCombo = new QComboBox(this);
    m_gpuCombo->setObjectName(QStringLiteral("gpu"));
    m_gpuCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    label->setBuddy(m_gpuCombo);
    bar->addWidget(label);
    bar->addWidget(m_gpuCombo);
    bar->addStretch(1);
    auto* resetZoom = new QPushButton(tr("Reset zoom"), this);
    resetZoom->setObjectName(QStringLiteral("resetZoom"));
    resetZoom->setToolTip(tr("Show every point and roof again (drag a rectangle or turn the wheel on the chart to zoom)"));
    bar->addWidget(resetZoom);
    layout->addLayout(bar);

    m_chart = new RooflineChart(this);
    connect(resetZoom, &QPushButton::clicked, m_chart, &RooflineChart::resetZoom);
    // The legend in a column on the right: in a row under the chart, six entries naming their
    // placement ("L1 eager reference (analytic …)") were cut off at 1440 px.
    m_chart->chart()->legend()->setAlignment(Qt::AlignRight);
    layout->addWidget(m_chart, 1);

    m_help = new QLabel(this);
    m_help->setObjectName(QStringLiteral("rooflineHelp"));
    m_help->setWordWrap(true);
    m_help->setTextFormat(Qt::RichText);
    m_help->setContentsMargins(4, 2, 4, 2);
    layout->addWidget(m_help);

    // The current GPU's entry is added (first) when the worker reports one.
    for (const GpuRoofs& g : gpuTable()) {
        m_gpuCombo->addItem(g.key == kStudyKey ? g.name + QStringLiteral(" (the study's GPU)") : g.name, g.key);
        m_gpuCombo->setItemData(m_gpuCombo->count() - 1, g.citation, Qt::ToolTipRole);
    }
    connect(m_gpuCombo, qOverload<int>(&QComboBox::activated), this, [this](int) { m_userChose = true; });
    connect(m_gpuCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, &RooflinePage::onGpuChosen);
    connect(m_chart, &RooflineChart::taskActivated, this, &RooflinePage::taskActivated);
    m_gpuCombo->setCurrentIndex(m_gpuCombo->findData(kStudyKey));
    onGpuChosen(m_gpuCombo->currentIndex());
}

RooflinePage::~RooflinePage() = default;

void RooflinePage::setCurrentDevice(const DeviceFacts& device, const QString& origin)
{
    const QString who = origin.isEmpty() ? QStringLiteral("This machine") : origin;
    m_current = fromDeviceFacts(device);
    const bool valid = m_current.isValid();
    QString text;
    if (valid) {
        const Roof* mem = m_current.primaryMemory();
        text = QStringLiteral("%1: %2 (%3)")
                   .arg(who, m_current.name, mem->origin == Roof::Origin::Measured ? QStringLiteral("measured")
                                                                              : QStringLiteral("theoretical"));
    } else {
        text = QStringLiteral("%1: no GPU").arg(who);
    }
    int index = m_gpuCombo->findData(kCurrentKey);
    if (index < 0) {
        m_gpuCombo->insertItem(0, text, kCurrentKey);
        index = 0;
    } else {
        m_gpuCombo->setItemText(index, text);
    }
    m_gpuCombo->setItemData(index, m_current.citation, Qt::ToolTipRole);
    // Without a GPU the entry stays, greyed out, to say why the table is all there is.
    if (auto* model = qobject_cast<QStandardItemModel*>(m_gpuCombo->model())) {
        if (QStandardItem* item = model->item(index))
            item->setEnabled(valid);
    }
    m_hasCurrent = valid;
    if (valid && (!m_userChose || selectedGpuKey() == kCurrentKey)) {
        if (m_gpuCombo->currentIndex() == index)
            onGpuChosen(index); // same entry, new numbers
        else
            m_gpuCombo->setCurrentIndex(index);
    }
}

void RooflinePage::setPoints(const QList<RooflinePoint>& points)
{
    m_chart->setPoints(points);
}

bool RooflinePage::selectGpu(const QString& key)
{
    if (key == kCurrentKey && !m_hasCurrent)
        return false;
    const int index = m_gpuCombo->findData(key);
    if (index < 0)
        return false;
    m_gpuCombo->setCurrentIndex(index);
    return true;
}

QString RooflinePage::selectedGpuKey() const
{
    return m_gpuCombo->currentData().toString();
}

GpuRoofs RooflinePage::selectedRoofs() const
{
    return m_chart->roofs();
}

void RooflinePage::onGpuChosen(int index)
{
    const QString key = m_gpuCombo->itemData(index).toString();
    if (key == kCurrentKey) {
        m_chart->setRoofs(m_current);
    } else if (const GpuRoofs* g = findGpu(key)) {
        m_chart->setRoofs(*g);
    }
    updateHelp();
}

QString RooflinePage::helpText() const
{
    return m_help->text();
}

void RooflinePage::updateHelp()
{
    const GpuRoofs& roofs = m_chart->roofs();
    QString ridge;
    if (roofs.isValid())
        ridge = QStringLiteral(" On the %1 the FP32 ridge point is %2 (%3 ÷ %4).")
                    .arg(roofs.name.toHtmlEscaped(), intensityText(roofs.fp32RidgeIntensity()),
                         humanGflops(roofs.fp32Gflops()), humanBandwidth(roofs.bandwidthGBps()));
    m_help->setText(
        QStringLiteral("<b>How to read it.</b> Below the ridge point a kernel is memory-bound: it waits on HBM, so "
                       "fusing the epilogue (bias, activation, scaling) into one pass that saves HBM traffic pays. "
                       "Above it a kernel is compute-bound: cuBLAS and cuDNN already run it near the FP32 roof, so "
                       "re-implementing them does not.%1 The dashed tensor-core roofs (drawn for every GPU that has "
                       "them) bound only kernels that run on tensor cores; the study's fp32 kernels (TF32 off) are "
                       "bound by the solid FP32 roof. Times are drawn only against the GPU they were measured on "
                       "(filled markers); for another GPU each task is placed analytically, where that GPU's roofs "
                       "put it at its intensity (hollow markers on the roof). A red star is a time below the "
                       "roofline floor: physically impossible, so not counted anywhere.")
            .arg(ridge));
}

} // namespace kwb::app

#include "app/charts/gpuchooser.h"

#include <QStandardItemModel>

namespace kwb::app {

namespace {
const QString kCurrentKey = QStringLiteral("current");
const QString kStudyKey = QStringLiteral("v100-sxm2-32gb");
} // namespace

GpuChooser::GpuChooser(const QString& defaultKey, QWidget* parent)
    : QComboBox(parent)
{
    setObjectName(QStringLiteral("gpu"));
    setSizeAdjustPolicy(QComboBox::AdjustToContents);
    for (const GpuRoofs& g : gpuTable()) {
        addItem(g.key == kStudyKey ? g.name + QStringLiteral(" (the study's GPU)") : g.name, g.key);
        setItemData(count() - 1, g.citation, Qt::ToolTipRole);
    }
    const int start = findData(defaultKey);
    setCurrentIndex(start >= 0 ? start : 0);
    connect(this, qOverload<int>(&QComboBox::activated), this, [this](int) { m_userChose = true; });
    connect(this, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this](int) { Q_EMIT roofsChanged(selectedRoofs()); });
}

void GpuChooser::setCurrentDevice(const DeviceFacts& device, const QString& origin)
{
    const QString who = origin.isEmpty() ? QStringLiteral("This machine") : origin;
    m_current = fromDeviceFacts(device);
    const bool valid = m_current.isValid();
    QString text;
    if (valid) {
        const Roof* mem = m_current.primaryMemory();
        text = QStringLiteral("%1: %2 (%3)")
                   .arg(who, m_current.name,
                        mem->origin == Roof::Origin::Measured ? QStringLiteral("measured")
                                                              : QStringLiteral("theoretical"));
    } else {
        text = QStringLiteral("%1: no GPU").arg(who);
    }
    int index = findData(kCurrentKey);
    if (index < 0) {
        const QSignalBlocker block(this); // inserting before the selection moves no choice
        insertItem(0, text, kCurrentKey);
        index = 0;
    } else {
        setItemText(index, text);
    }
    setItemData(index, m_current.citation, Qt::ToolTipRole);
    if (auto* items = qobject_cast<QStandardItemModel*>(model())) {
        if (QStandardItem* item = items->item(index))
            item->setEnabled(valid);
    }
    m_hasCurrent = valid;
    if (valid && (!m_userChose || selectedKey() == kCurrentKey)) {
        if (currentIndex() == index)
            Q_EMIT roofsChanged(selectedRoofs()); // same entry, new numbers
        else
            setCurrentIndex(index);
    }
}

bool GpuChooser::selectGpu(const QString& key)
{
    if (key == kCurrentKey && !m_hasCurrent)
        return false;
    const int index = findData(key);
    if (index < 0)
        return false;
    setCurrentIndex(index);
    return true;
}

QString GpuChooser::selectedKey() const
{
    return currentData().toString();
}

GpuRoofs GpuChooser::selectedRoofs() const
{
    const QString key = selectedKey();
    if (key == kCurrentKey)
        return m_current;
    if (const GpuRoofs* g = findGpu(key))
        return *g;
    return GpuRoofs();
}

} // namespace kwb::app

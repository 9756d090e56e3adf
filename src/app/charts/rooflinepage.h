#pragma once
// The roofline page: a GPU chooser (this machine's GPU from the worker's `device` response, and
// every GPU of the built-in table; the V100 reproduces the study's framing), the roofline chart,
// and two sentences that say how to read it.

#include "app/charts/gpuchooser.h"
#include "app/charts/rooflinechart.h"
#include "core/protocol/devicefacts.h"
#include "core/tasks/gputable.h"

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;

namespace kwb::app {

class RooflinePage : public QWidget
{
    Q_OBJECT
public:
    explicit RooflinePage(QWidget* parent = nullptr);
    ~RooflinePage() override;

    /// The worker's `device` response (with or without ceilings). Adds or updates the "current
    /// GPU" entry and selects it, unless the user already picked a GPU by hand.
    /// `origin` names where the device comes from in the GPU list (default "This machine"; e.g.
    /// "Run database" for the GPU a database was measured on).
    void setCurrentDevice(const DeviceFacts& device, const QString& origin = QString());
    /// The tasks to place (see RooflinePoint).
    void setPoints(const QList<RooflinePoint>& points);

    /// Selects "current" or a gpuTable() key; false if there is no such entry (or the current GPU
    /// is not known).
    bool selectGpu(const QString& key);
    QString selectedGpuKey() const;
    /// The roofs drawn now.
    GpuRoofs selectedRoofs() const;

    RooflineChart* chart() const { return m_chart; }
    GpuChooser* gpuCombo() const { return m_gpuCombo; }
    /// The how-to-read text under the chart (it names the selected GPU's ridge point, and says
    /// only what is drawn: tensor-core and theoretical roofs, markers placed by measured traffic,
    /// stars, the dense drawing of many tasks where there are any).
    QString helpText() const;
    /// The task finder (an editable list of the placed tasks): picking one selects it.
    QComboBox* taskFinder() const { return m_find; }
    /// "Label tasks": names every task on the chart where the names fit.
    QCheckBox* labelsToggle() const { return m_labels; }
    /// The selected task's numbers, under the chart.
    QString selectionInfo() const;

Q_SIGNALS:
    /// A task's point was clicked on the chart.
    void taskActivated(const QString& task);

private:
    void updateHelp();
    void fillFinder();
    void showSelection(const QString& task);

    GpuChooser* m_gpuCombo = nullptr;
    RooflineChart* m_chart = nullptr;
    QLabel* m_help = nullptr;
    QComboBox* m_find = nullptr;
    QCheckBox* m_labels = nullptr;
    QLabel* m_selection = nullptr;
    QPushButton* m_open = nullptr;
};

} // namespace kwb::app

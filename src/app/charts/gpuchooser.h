#pragma once
// The GPU a chart is drawn for: every GPU of the table (gpus/datasheets.json) and, first, the GPU
// a worker or a run database reported ("This machine: NVIDIA H200 (measured)"). The Roofline and
// HBM traffic pages each have one, so the rules for the reported GPU live here once.

#include "core/protocol/devicefacts.h"
#include "core/tasks/gputable.h"

#include <QComboBox>
#include <QString>

namespace kwb::app {

class GpuChooser : public QComboBox
{
    Q_OBJECT
public:
    /// Lists the GPU table and selects `defaultKey` (a table key).
    explicit GpuChooser(const QString& defaultKey, QWidget* parent = nullptr);

    /// A `device` answer (the worker's, or the one a run database was measured with). Adds or
    /// updates the "current" entry (first) and selects it, unless the user already picked a GPU by
    /// hand. Without a GPU the entry stays, disabled, to say why the table is all there is.
    /// `origin` names where it comes from (default "This machine").
    void setCurrentDevice(const DeviceFacts& device, const QString& origin = QString());
    /// "current" or a gpuTable() key; false if there is no such (usable) entry.
    bool selectGpu(const QString& key);
    QString selectedKey() const;
    /// The roofs of the selected entry (invalid when none).
    GpuRoofs selectedRoofs() const;

Q_SIGNALS:
    /// The selected GPU or its numbers changed.
    void roofsChanged(const kwb::GpuRoofs& roofs);

private:
    GpuRoofs m_current;
    bool m_hasCurrent = false;
    bool m_userChose = false;
};

} // namespace kwb::app

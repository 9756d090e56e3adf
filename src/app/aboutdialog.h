#pragma once
// About Kernel Workbench: the versions a result depends on, side by side, as this window knows
// them: kwb's own, and from the worker's hello the worker's version and protocol, torch, the
// CUDA runtime, NVRTC and the driver, and the GPU from its device answer. Where the worker has
// not answered (not found, still starting), the rows say so instead of guessing.

#include "core/protocol/devicefacts.h"
#include "core/protocol/workerresponses.h"

#include <QDialog>
#include <QList>
#include <QPair>

#include <optional>

namespace kwb::app {

class AboutDialog : public QDialog
{
    Q_OBJECT
public:
    /// hello: the worker's hello (nullopt: none yet); device: its device answer (where it came).
    AboutDialog(const std::optional<HelloInfo>& hello, const std::optional<DeviceFacts>& device,
                const QString& workerProgram, QWidget* parent = nullptr);

    /// The rows shown: (what, version), in order.
    static QList<QPair<QString, QString>> versionRows(const std::optional<HelloInfo>& hello,
                                                      const std::optional<DeviceFacts>& device,
                                                      const QString& workerProgram);
    /// The rows as plain text, one "what: version" a line (what "Copy" puts on the clipboard).
    QString versionsText() const;

private:
    QList<QPair<QString, QString>> m_rows;
};

} // namespace kwb::app

#include "aboutdialog.h"

#include "app/editor/syntaxhighlighting.h"
#include "core/config/buildinfo.h"
#include "core/protocol/protocolcodec.h"

#include <QClipboard>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGuiApplication>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace kwb::app {

QList<QPair<QString, QString>> AboutDialog::versionRows(const std::optional<HelloInfo>& hello,
                                                        const std::optional<DeviceFacts>& device,
                                                        const QString& workerProgram)
{
    QList<QPair<QString, QString>> rows;
    rows.append({tr("Kernel Workbench"), QStringLiteral(KWB_VERSION)});
    // The commit names the code exactly (a version is shared by many); runs store it too.
    rows.append({tr("Built from commit"), kwbCommit()});
    rows.append({tr("Protocol (this build)"), QString::number(kProtocolVersion)});
    const QString unknown =
        workerProgram.isEmpty() ? tr("unknown: no worker found") : tr("unknown: the worker has not answered yet");
    const auto said = [&](const QString& value) { return value.isEmpty() ? tr("not reported by the worker") : value; };
    if (hello) {
        rows.append({tr("Worker"), said(hello->worker)});
        rows.append({tr("Worker protocol"), hello->protocol ? QString::number(*hello->protocol) : said(QString())});
        rows.append({tr("PyTorch"), said(hello->torch)});
        rows.append({tr("CUDA runtime"), said(hello->cudaRuntime)});
        rows.append({tr("NVRTC"), said(hello->nvrtc)});
        // The hello's `driver` says whether the driver loaded ("ok"); its version is in the device answer.
        const QString driver = device && !device->driverVersion.isEmpty() ? device->driverVersion : hello->driver;
        rows.append({tr("CUDA driver"), said(driver)});
    } else {
        for (const QString& what :
             {tr("Worker"), tr("Worker protocol"), tr("PyTorch"), tr("CUDA runtime"), tr("NVRTC"), tr("CUDA driver")})
            rows.append({what, unknown});
    }
    if (!workerProgram.isEmpty())
        rows.append({tr("Worker program"), workerProgram});
    if (device)
        rows.append({tr("GPU"), device->available ? (device->name.isEmpty() ? tr("unnamed GPU") : device->name)
                                                  : tr("none (%1)").arg(device->reason)});
    rows.append({tr("Qt"), QString::fromLatin1(qVersion())});
    rows.append({tr("Syntax highlighting"), highlighterBackend()});
    return rows;
}

AboutDialog::AboutDialog(const std::optional<HelloInfo>& hello, const std::optional<DeviceFacts>& device,
                         const QString& workerProgram, QWidget* parent)
    : QDialog(parent)
    , m_rows(versionRows(hello, device, workerProgram))
{
    setObjectName(QStringLiteral("aboutDialog"));
    setWindowTitle(tr("About Kernel Workbench"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("<h3>Kernel Workbench %1</h3>"
                                "<p>A workbench for studying how small language models write CUDA kernels for "
                                "KernelBench tasks: prompts, regimes, evaluation and the roofline.</p>")
                                 .arg(QStringLiteral(KWB_VERSION)),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto* form = new QFormLayout;
    for (const auto& [what, version] : std::as_const(m_rows)) {
        auto* value = new QLabel(version, this);
        value->setTextInteractionFlags(Qt::TextSelectableByMouse);
        value->setWordWrap(true);
        form->addRow(what + QLatin1Char(':'), value);
    }
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton* copy = buttons->addButton(tr("Copy Versions"), QDialogButtonBox::ActionRole);
    copy->setToolTip(tr("Put these versions on the clipboard, for a bug report or a results file"));
    connect(copy, &QPushButton::clicked, this, [this] { QGuiApplication::clipboard()->setText(versionsText()); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QString AboutDialog::versionsText() const
{
    QStringList lines;
    for (const auto& [what, version] : m_rows)
        lines << what + QStringLiteral(": ") + version;
    return lines.join(QLatin1Char('\n'));
}

} // namespace kwb::app

// `kwb gpus`: the roofline's GPU table as the program reads it (core/tasks/gputable.h): the shipped
// file's GPUs, then the user's, and every user file left out, with why. A user who adds a GPU sees
// here whether it loaded, without opening the window. Needs no worker.

#include "commands.h"
#include "textformat.h"

#include "core/tasks/gputable.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace kwb::cli {

namespace {

QJsonObject gpuJson(const GpuRoofs& gpu)
{
    QJsonArray roofs;
    for (const Roof& roof : gpu.roofs)
        roofs.append(
            QJsonObject{{QStringLiteral("label"), roof.label},
                        {QStringLiteral("value"), roof.value},
                        {QStringLiteral("unit"), roof.isCompute() ? QStringLiteral("GFLOP/s") : QStringLiteral("GB/s")},
                        {QStringLiteral("source"), roof.source}});
    return QJsonObject{{QStringLiteral("key"), gpu.key},
                       {QStringLiteral("name"), gpu.name},
                       {QStringLiteral("device_names"), QJsonArray::fromStringList(gpu.deviceNames)},
                       {QStringLiteral("roofs"), roofs}};
}

} // namespace

int runGpus(bool json)
{
    const QList<GpuRoofs>& gpus = gpuTable();
    const QString error = gpuTableError();
    const QStringList skipped = gpuTableSkipped();
    const int code = error.isEmpty() ? ExitSuccess : ExitUsage;
    if (json) {
        QJsonArray list;
        for (const GpuRoofs& gpu : gpus)
            list.append(gpuJson(gpu));
        const QJsonObject top{{QStringLiteral("ok"), error.isEmpty()},
                              {QStringLiteral("table"), defaultGpuTablePath()},
                              {QStringLiteral("user_dir"), userGpuTableDir()},
                              {QStringLiteral("gpus"), list},
                              {QStringLiteral("error"), error.isEmpty() ? QJsonValue() : QJsonValue(error)},
                              {QStringLiteral("skipped"), QJsonArray::fromStringList(skipped)}};
        out() << QString::fromUtf8(QJsonDocument(top).toJson(QJsonDocument::Indented));
        out().flush();
        return code;
    }
    if (!error.isEmpty()) {
        err() << "kwb gpus: " << error << '\n';
        err().flush();
        return code;
    }
    TextTable table({QStringLiteral("KEY"), QStringLiteral("NAME"), QStringLiteral("MEMORY"), QStringLiteral("FP32")});
    for (const GpuRoofs& gpu : gpus) {
        const Roof* memory = gpu.primaryMemory();
        const Roof* fp32 = gpu.primaryFp32();
        table.addRow({gpu.key, gpu.name, memory ? memory->displayText() : QStringLiteral("-"),
                      fp32 ? fp32->displayText() : QStringLiteral("-")});
    }
    out() << table.render() << '\n'
          << gpus.size() << " GPUs from " << defaultGpuTablePath() << "; yours go in " << userGpuTableDir()
          << " (docs/roofline.md)";
    if (!skipped.isEmpty())
        out() << ", " << skipped.size() << (skipped.size() == 1 ? " file left out" : " files left out");
    out() << '\n';
    for (const QString& why : skipped)
        out() << "  " << why << '\n';
    out().flush();
    return code;
}

} // namespace kwb::cli

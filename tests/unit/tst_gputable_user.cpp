// A user adds a GPU without compiling (core/tasks/gputable.h): a JSON file in the shipped table's
// format in $XDG_CONFIG_HOME/kernel-workbench/gpus joins the table gpuTable() gives; a bad file, or
// one with a key the table has, is left out whole and says why. A test of its own: gpuTable() is
// loaded once per process, here with this test's user folder.

#include "core/tasks/gputable.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;

namespace {

QJsonObject shippedJson()
{
    QFile f(QStringLiteral(KWB_SOURCE_DIR "/gpus/datasheets.json"));
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}

/// The shipped file with only its H200 entry, under another key and name: a user's GPU.
QJsonObject userTable(const QString& key, const QString& name)
{
    QJsonObject table = shippedJson();
    QJsonObject entry;
    for (const QJsonValue& v : table.value(QLatin1String("gpus")).toArray())
        if (v.toObject().value(QLatin1String("key")).toString() == QLatin1String("h200-sxm-141gb"))
            entry = v.toObject();
    entry.insert(QStringLiteral("key"), key);
    entry.insert(QStringLiteral("name"), name);
    entry.insert(QStringLiteral("device_names"), QJsonArray{QStringLiteral("^NVIDIA H200 NVL$")});
    table.insert(QStringLiteral("gpus"), QJsonArray{entry});
    return table;
}

bool write(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

} // namespace

class TestGpuTableUser : public QObject
{
    Q_OBJECT

    QTemporaryDir m_config;
    QString m_dir;

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_config.isValid());
        m_dir = m_config.filePath(QStringLiteral("kernel-workbench/gpus"));
        QVERIFY(QDir().mkpath(m_dir));
        QVERIFY(
            write(m_dir + QStringLiteral("/h200-nvl.json"),
                  QJsonDocument(userTable(QStringLiteral("h200-nvl"), QStringLiteral("NVIDIA H200 NVL"))).toJson()));
        // Loaded in name order: "again" is read before "h200-nvl", so only the shipped key clashes.
        QVERIFY(
            write(m_dir + QStringLiteral("/again.json"),
                  QJsonDocument(userTable(QStringLiteral("h100-sxm-80gb"), QStringLiteral("H100 again"))).toJson()));
        QVERIFY(write(m_dir + QStringLiteral("/broken.json"), "{\"format\": 1,\n\"gpus\": [}\n"));
        QVERIFY(write(m_dir + QStringLiteral("/notes.txt"), "not a table"));
        qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8());
        qunsetenv("KWB_GPU_TABLE");
    }

    void theUsersFolderIsInTheConfigDir() { QCOMPARE(userGpuTableDir(), m_dir); }

    void theUsersGpuJoinsTheTable()
    {
        const GpuTableLoad shipped = loadGpuTable(defaultGpuTablePath());
        QVERIFY2(shipped.ok(), qPrintable(shipped.error));
        QVERIFY2(gpuTableError().isEmpty(), qPrintable(gpuTableError()));
        QCOMPARE(gpuTable().size(), shipped.gpus.size() + 1);
        QCOMPARE(gpuTable().last().key, QStringLiteral("h200-nvl"));
        const GpuRoofs* mine = findGpu(QStringLiteral("h200-nvl"));
        QVERIFY(mine && mine->isValid());
        QCOMPARE(mine->name, QStringLiteral("NVIDIA H200 NVL"));
        QCOMPARE(findGpuForDevice(QStringLiteral("NVIDIA H200 NVL")), mine);
        // The shipped H100 is the shipped one, not the user's file that took its key.
        for (const GpuRoofs& g : shipped.gpus)
            if (g.key == QLatin1String("h100-sxm-80gb"))
                QCOMPARE(findGpu(g.key)->name, g.name);
    }

    void filesLeftOutSayWhy()
    {
        const QStringList skipped = gpuTableSkipped();
        QCOMPARE(skipped.size(), 2);
        QCOMPARE(skipped.at(0), m_dir + QStringLiteral("/again.json: key \"h100-sxm-80gb\" is already in the GPU "
                                                       "table (shipped, or a file before it)"));
        QVERIFY2(skipped.at(1).startsWith(m_dir + QStringLiteral("/broken.json:2:")), qPrintable(skipped.at(1)));
    }

    // A bad shipped table gives no table, whatever the user's folder holds.
    void aBadShippedTableGivesNone()
    {
        QTemporaryDir dir;
        const GpuTableLoad load = loadGpuTables(dir.filePath(QStringLiteral("missing.json")), m_dir);
        QVERIFY(!load.ok());
        QVERIFY(load.gpus.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestGpuTableUser)
#include "tst_gputable_user.moc"

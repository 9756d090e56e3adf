// `kwb eval` on the kernels as they ran (issue 40 items 2 and 4), through the fake worker: the
// recorded H200 evaluation of the L2/1 reference, given the `launches` a GPU worker now adds (the
// three kernels of that recording, at launch configurations written here), prints each launch
// with its occupancy and each kernel placed by its work with its achieved bandwidth against the
// evaluation's own peak; --json carries the same as `kernel_work`.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

namespace {

QJsonObject readJson(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}

QJsonObject launch(const QString& name, bool custom, double ns, int block, int regs, int dynamicShared, int blocks,
                   double fraction, const QString& limit)
{
    return QJsonObject{
        {QStringLiteral("name"), name},
        {QStringLiteral("custom"), custom},
        {QStringLiteral("calls"), 1},
        {QStringLiteral("time_ns"), ns},
        {QStringLiteral("grid"), QJsonArray{7938, 1, 1}},
        {QStringLiteral("block"), QJsonArray{block, 1, 1}},
        {QStringLiteral("registers"), regs},
        {QStringLiteral("static_shared_bytes"), 0},
        {QStringLiteral("dynamic_shared_bytes"), dynamicShared},
        {QStringLiteral("local_bytes"), 0},
        {QStringLiteral("occupancy"), QJsonObject{{QStringLiteral("active_blocks_per_sm"), blocks},
                                                  {QStringLiteral("active_warps_per_sm"), blocks * block / 32},
                                                  {QStringLiteral("max_warps_per_sm"), 64},
                                                  {QStringLiteral("fraction"), fraction},
                                                  {QStringLiteral("limited_by"), QJsonArray{limit}}}}};
}

} // namespace

class TestCliKernels : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_recorded;
    QString m_candidate;

    QString eval(const QStringList& extra, int* exitCode)
    {
        QProcess kwb;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("FAKEWORKER_RECORDED_DIR"), m_recorded);
        env.insert(QStringLiteral("KWB_WORKER_ENV"), QStringLiteral("FAKEWORKER_RECORDED_DIR")); // kwb passes it on
        // The OS sandbox gives the worker a private /tmp, where the copy lies: this test is about
        // kwb's lines, not the sandbox (tst_cli checks that).
        kwb.setProcessEnvironment(env);
        kwb.start(QStringLiteral(KWB_CLI),
                  QStringList{QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("eval"),
                              QStringLiteral("L2/1"), m_candidate, QStringLiteral("--no-os-sandbox")} +
                      extra);
        if (!kwb.waitForFinished(60000))
            return QStringLiteral("kwb did not finish");
        *exitCode = kwb.exitCode();
        // stdout alone: --no-os-sandbox's warning goes to stderr, --json's object to stdout.
        return QString::fromUtf8(kwb.readAllStandardOutput());
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        // The recorded responses, with launches added to the correct evaluation's.
        const QDir source(QStringLiteral(KWB_PROTOCOL_RECORDED_DIR));
        m_recorded = m_dir.filePath(QStringLiteral("recorded"));
        QVERIFY(QDir().mkpath(m_recorded));
        for (const QString& name : source.entryList(QDir::Files))
            QVERIFY(QFile::copy(source.filePath(name), m_recorded + QLatin1Char('/') + name));
        QVERIFY(QFile::copy(source.filePath(QStringLiteral("../01_hello.response.json")),
                            m_dir.filePath(QStringLiteral("01_hello.response.json"))));
        const QString correct = m_recorded + QStringLiteral("/evaluate_correct.h200.response.json");
        QJsonObject r = readJson(correct);
        QVERIFY(!r.isEmpty());
        QJsonArray launches;
        for (const QJsonValue& v : r.value(QStringLiteral("kernels")).toArray()) {
            const QJsonObject k = v.toObject();
            const bool own = k.value(QStringLiteral("custom")).toBool();
            const bool conv = k.value(QStringLiteral("name")).toString().contains(QLatin1String("xmma"));
            launches.append(launch(k.value(QStringLiteral("name")).toString(), own,
                                   k.value(QStringLiteral("time_ns")).toDouble(), own ? 256 : 128, conv ? 128 : 16,
                                   conv ? 49152 : 0,
                                   conv  ? 3
                                   : own ? 8
                                         : 16,
                                   conv  ? 0.1875
                                   : own ? 1.0
                                         : 1.0,
                                   conv ? QStringLiteral("registers") : QStringLiteral("warps")));
        }
        QCOMPARE(launches.size(), 3);
        r.insert(QStringLiteral("launches"), launches);
        QFile out(correct);
        QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(QJsonDocument(r).toJson());
        out.close();
        m_candidate = m_dir.filePath(QStringLiteral("correct.md"));
        QFile c(m_candidate);
        QVERIFY(c.open(QIODevice::WriteOnly));
        c.write("<!-- status: correct -->\n```cuda\nextern \"C\" __global__ void relu_bias_add() {}\n```\n"
                "```python\ndef forward(x):\n    return x\n```\n");
    }

    void textShowsLaunchesAndKernelWork()
    {
        int code = -1;
        const QString output = eval({}, &code);
        QVERIFY2(code == 0, qPrintable(output));
        // The epilogue as launched: 256 threads, 16 registers, full occupancy.
        QVERIFY2(output.contains(QStringLiteral("relu_bias_add (its own): grid 7938\u00d71\u00d71 of 256 threads, 16 "
                                                "registers, no shared memory: 100 % theoretical occupancy, 8 blocks "
                                                "per SM (limited by warps); 1 call, 669.9 \u00b5s")),
                 qPrintable(output));
        QVERIFY2(output.contains(QStringLiteral("48 KiB shared (dynamic): 19 % theoretical occupancy, 3 blocks per SM "
                                                "(limited by registers)")),
                 qPrintable(output));
        // Placed by its work: L2/1's epilogue moves 2 080 899 584 B in 669 888 ns = 3.11 TB/s, 65 % of
        // the recording's 4 814 GB/s.
        QVERIFY2(output.contains(
                     QStringLiteral("relu_bias_add (relu, add): memory-bound: 65 % of HBM bandwidth "
                                    "(3.11 TB/s of 4.81 TB/s theoretical; library op + fused epilogue, analytic); "
                                    "100 % occupancy")),
                 qPrintable(output));
        QVERIFY2(output.contains(QStringLiteral("library kernels (2) (conv2d): compute-bound")), qPrintable(output));
    }

    void jsonCarriesKernelWork()
    {
        int code = -1;
        const QString output = eval({QStringLiteral("--json")}, &code);
        QCOMPARE(code, 0);
        const QJsonObject result = QJsonDocument::fromJson(output.toUtf8()).object();
        const QJsonArray work = result.value(QStringLiteral("kernel_work")).toArray();
        QCOMPARE(work.size(), 2);
        const QJsonObject mine = work.at(1).toObject();
        QCOMPARE(mine.value(QStringLiteral("label")).toString(), QStringLiteral("relu_bias_add"));
        QCOMPARE(mine.value(QStringLiteral("bytes")).toDouble(), 2080899584.0);
        QCOMPARE(mine.value(QStringLiteral("bytes_from")).toString(),
                 QStringLiteral("library op + fused epilogue (analytic)"));
        QVERIFY(std::abs(mine.value(QStringLiteral("achieved_gbps")).toDouble() - 2080899584.0 / 669888.0) < 1e-6);
        QVERIFY(mine.value(QStringLiteral("reading")).toString().startsWith(QStringLiteral("memory-bound: 65 %")));
    }
};

QTEST_GUILESS_MAIN(TestCliKernels)
#include "tst_cli_kernels.moc"

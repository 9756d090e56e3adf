// The GPU table (datasheet peaks) and the roofs of the current GPU from the worker's `device`
// response, in the worker's nested form and in the documented flat form.
#include "chartstestdata.h"

#include "core/tasks/gputable.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace kwb;

namespace {

const Roof* findRoof(const GpuRoofs& g, Roof::Kind kind, Roof::Origin origin)
{
    for (const Roof& r : g.roofs)
        if (r.kind == kind && r.origin == origin)
            return &r;
    return nullptr;
}

const QString kShippedTable = QStringLiteral(KWB_SOURCE_DIR "/gpus/datasheets.json");

QJsonObject shippedJson()
{
    QFile f(kShippedTable);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

QByteArray toBytes(const QJsonObject& o)
{
    return QJsonDocument(o).toJson();
}

/// The shipped table with one roof's field set (or removed, for an undefined value).
QJsonObject withRoofField(int gpu, int roof, const QString& field, const QJsonValue& value)
{
    QJsonObject top = shippedJson();
    QJsonArray gpus = top.value(QLatin1String("gpus")).toArray();
    QJsonObject entry = gpus.at(gpu).toObject();
    QJsonArray roofs = entry.value(QLatin1String("roofs")).toArray();
    QJsonObject r = roofs.at(roof).toObject();
    if (value.isUndefined())
        r.remove(field);
    else
        r.insert(field, value);
    roofs.replace(roof, r);
    entry.insert(QStringLiteral("roofs"), roofs);
    gpus.replace(gpu, entry);
    top.insert(QStringLiteral("gpus"), gpus);
    return top;
}

/// The shipped table with one entry's field set (or removed).
QJsonObject withEntryField(int gpu, const QString& field, const QJsonValue& value)
{
    QJsonObject top = shippedJson();
    QJsonArray gpus = top.value(QLatin1String("gpus")).toArray();
    QJsonObject entry = gpus.at(gpu).toObject();
    if (value.isUndefined())
        entry.remove(field);
    else
        entry.insert(field, value);
    gpus.replace(gpu, entry);
    top.insert(QStringLiteral("gpus"), gpus);
    return top;
}

// What the table held when it was C++ (src/core/tasks/gputable.cpp before 2026-12-03): the file
// must give exactly these numbers, labels and notes.
struct FormerRoof
{
    Roof::Kind kind;
    double value;
    const char* label;
    const char* note;
};
struct FormerGpu
{
    const char* key;
    const char* name;
    const char* citation;
    int sms;
    qint64 l2MiB;
    QList<FormerRoof> roofs;
};

const char* const kSparse = "dense; the datasheet's larger figure is with 2:4 sparsity";

QList<FormerGpu> formerTable()
{
    using K = Roof::Kind;
    return {
        {"v100-sxm2-32gb",
         "NVIDIA V100 SXM2 32GB",
         "NVIDIA V100 datasheet (SXM2); Volta whitepaper",
         80,
         6,
         {{K::Memory, 900.0, "HBM", ""}, {K::Fp32, 15700.0, "FP32", ""}, {K::Fp16Tensor, 125000.0, "FP16 tensor", ""}}},
        {"a100-sxm-80gb",
         "NVIDIA A100 SXM 80GB",
         "NVIDIA A100 datasheet (80GB SXM); A100 whitepaper",
         108,
         40,
         {{K::Memory, 2039.0, "HBM", ""},
          {K::Fp32, 19500.0, "FP32", ""},
          {K::Tf32Tensor, 156000.0, "TF32 tensor", kSparse},
          {K::Bf16Tensor, 312000.0, "BF16/FP16 tensor", kSparse}}},
        {"h100-sxm-80gb",
         "NVIDIA H100 SXM 80GB",
         "NVIDIA H100 datasheet (SXM); Hopper whitepaper",
         132,
         50,
         {{K::Memory, 3350.0, "HBM", ""},
          {K::Fp32, 67000.0, "FP32", ""},
          {K::Tf32Tensor, 494700.0, "TF32 tensor", kSparse},
          {K::Bf16Tensor, 989400.0, "BF16/FP16 tensor", kSparse}}},
        {"h200-sxm-141gb",
         "NVIDIA H200 SXM 141GB",
         "NVIDIA H200 datasheet (SXM); L2 as the device reports it",
         132,
         60,
         {{K::Memory, 4800.0, "HBM", ""},
          {K::Fp32, 67000.0, "FP32", ""},
          {K::Tf32Tensor, 494700.0, "TF32 tensor", kSparse},
          {K::Bf16Tensor, 989400.0, "BF16/FP16 tensor", kSparse}}},
        {"l40s",
         "NVIDIA L40S",
         "NVIDIA L40S datasheet; Ada Lovelace whitepaper",
         142,
         96,
         {{K::Memory, 864.0, "GDDR6", ""},
          {K::Fp32, 91600.0, "FP32", ""},
          {K::Tf32Tensor, 183000.0, "TF32 tensor", kSparse},
          {K::Bf16Tensor, 362050.0, "BF16/FP16 tensor", kSparse}}},
        {"rtx-4090",
         "NVIDIA GeForce RTX 4090",
         "Ada Lovelace whitepaper (RTX 4090)",
         128,
         72,
         {{K::Memory, 1008.0, "GDDR6X", ""},
          {K::Fp32, 82600.0, "FP32", ""},
          {K::Tf32Tensor, 82600.0, "TF32 tensor", kSparse},
          {K::Bf16Tensor, 165200.0, "BF16/FP16 tensor", "dense, FP32 accumulate; 330.4 with sparsity"}}},
    };
}

} // namespace

class TestGpuTable : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void tableHasTheStudysGpus()
    {
        QSet<QString> keys;
        for (const GpuRoofs& g : gpuTable()) {
            QVERIFY2(g.isValid(), qPrintable(g.key));
            QVERIFY2(!keys.contains(g.key), qPrintable(g.key));
            keys.insert(g.key);
            QVERIFY(!g.citation.isEmpty());
            QVERIFY(g.smCount > 0);
            QVERIFY(g.l2Bytes > 0);
            for (const Roof& r : g.roofs) {
                QCOMPARE(r.origin, Roof::Origin::Datasheet);
                // Dense tensor-core peaks are well above FP32 on every GPU listed.
                if (r.isTensor())
                    QVERIFY2(r.value >= g.fp32Gflops(), qPrintable(g.key + QLatin1Char(' ') + r.label));
            }
        }
        for (const char* key :
             {"v100-sxm2-32gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "l40s", "rtx-4090"})
            QVERIFY2(keys.contains(QLatin1String(key)), key);
    }

    // The shipped file loads, every entry of it, with every value's unit and source.
    void everyShippedEntryLoads()
    {
        const GpuTableLoad load = loadGpuTable(kShippedTable);
        QVERIFY2(load.ok(), qPrintable(load.error));
        const QJsonArray raw = shippedJson().value(QLatin1String("gpus")).toArray();
        QCOMPARE(load.gpus.size(), raw.size());
        for (int i = 0; i < raw.size(); ++i) {
            const GpuRoofs& g = load.gpus.at(i);
            QCOMPARE(g.key, raw.at(i).toObject().value(QLatin1String("key")).toString());
            QVERIFY2(g.isValid(), qPrintable(g.key));
            QVERIFY2(!g.deviceNames.isEmpty(), qPrintable(g.key));
            QCOMPARE(g.roofs.size(), raw.at(i).toObject().value(QLatin1String("roofs")).toArray().size());
            for (const Roof& r : g.roofs)
                QVERIFY2(!r.source.isEmpty(), qPrintable(g.key + QLatin1Char(' ') + r.label));
        }
        // gpuTable() is this file, as a build tree finds it.
        QCOMPARE(defaultGpuTablePath(), kShippedTable);
        QVERIFY2(gpuTableError().isEmpty(), qPrintable(gpuTableError()));
        QCOMPARE(gpuTable().size(), load.gpus.size());
    }

    // Moving the table from C++ to the file changed no number, label or note.
    void shippedFileIsTheFormerBuiltInTable()
    {
        const QList<FormerGpu> former = formerTable();
        QCOMPARE(gpuTable().size(), former.size());
        for (int i = 0; i < former.size(); ++i) {
            const FormerGpu& f = former.at(i);
            const GpuRoofs& g = gpuTable().at(i);
            QCOMPARE(g.key, QString::fromLatin1(f.key));
            QCOMPARE(g.name, QString::fromLatin1(f.name));
            QCOMPARE(g.citation, QString::fromLatin1(f.citation));
            QCOMPARE(g.smCount, f.sms);
            QCOMPARE(g.l2Bytes, f.l2MiB * 1024 * 1024);
            QCOMPARE(g.roofs.size(), f.roofs.size());
            for (int k = 0; k < f.roofs.size(); ++k) {
                const Roof& r = g.roofs.at(k);
                QVERIFY(r.kind == f.roofs.at(k).kind);
                QVERIFY(r.origin == Roof::Origin::Datasheet);
                QVERIFY2(r.value == f.roofs.at(k).value,
                         qPrintable(g.key + QLatin1Char(' ') + QString::number(r.value)));
                QCOMPARE(r.label, QString::fromLatin1(f.roofs.at(k).label));
                QCOMPARE(r.note, QString::fromLatin1(f.roofs.at(k).note));
            }
        }
    }

    // A bad file is refused as a whole, with the file, the entry (index and key), the field and
    // what is wrong with it.
    void badFileIsReportedPrecisely_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("error");
        QTest::newRow("unit not the kind's")
            << toBytes(withRoofField(2, 1, QStringLiteral("unit"), QStringLiteral("TFLOPS")))
            << QStringLiteral("T: gpus[2] (h100-sxm-80gb): roofs[1].unit: \"TFLOPS\" is not a unit of a compute roof "
                              "(GFLOP/s or TFLOP/s)");
        QTest::newRow("memory in FLOP/s")
            << toBytes(withRoofField(0, 0, QStringLiteral("unit"), QStringLiteral("TFLOP/s")))
            << QStringLiteral("T: gpus[0] (v100-sxm2-32gb): roofs[0].unit: \"TFLOP/s\" is not a unit of a memory roof "
                              "(GB/s or TB/s)");
        QTest::newRow("value missing") << toBytes(withRoofField(3, 0, QStringLiteral("value"), QJsonValue::Undefined))
                                       << QStringLiteral("T: gpus[3] (h200-sxm-141gb): roofs[0].value: missing");
        QTest::newRow("value a string")
            << toBytes(withRoofField(3, 0, QStringLiteral("value"), QStringLiteral("4.8")))
            << QStringLiteral("T: gpus[3] (h200-sxm-141gb): roofs[0].value: must be a number, not a string");
        QTest::newRow("value not positive") << toBytes(withRoofField(1, 1, QStringLiteral("value"), -19.5))
                                            << QStringLiteral("T: gpus[1] (a100-sxm-80gb): roofs[1].value: must be a "
                                                              "number above 0, not -19.5");
        QTest::newRow("misspelt field") << toBytes(withRoofField(4, 2, QStringLiteral("vaule"), 1))
                                        << QStringLiteral(
                                               "T: gpus[4] (l40s): roofs[2].vaule: unknown field (known: kind, "
                                               "label, value, unit, source, note, comment)");
        QTest::newRow("unknown kind") << toBytes(
                                             withRoofField(5, 2, QStringLiteral("kind"), QStringLiteral("fp8_tensor")))
                                      << QStringLiteral(
                                             "T: gpus[5] (rtx-4090): roofs[2].kind: \"fp8_tensor\" is not a "
                                             "roof kind (memory, fp32, tf32_tensor, bf16_tensor, fp16_tensor)");
        QTest::newRow("unknown source")
            << toBytes(withRoofField(0, 1, QStringLiteral("source"), QStringLiteral("v100-brochure")))
            << QStringLiteral(
                   "T: gpus[0] (v100-sxm2-32gb): roofs[1].source: \"v100-brochure\" is not one of the file's "
                   "sources (a100-datasheet, ada-whitepaper, ampere-whitepaper, h100-datasheet, h200-datasheet, "
                   "h200-device, hopper-whitepaper, l40s-datasheet, v100-datasheet, volta-whitepaper)");
        QTest::newRow("no fp32 roof")
            << toBytes(withRoofField(0, 1, QStringLiteral("kind"), QStringLiteral("tf32_tensor")))
            << QStringLiteral("T: gpus[0] (v100-sxm2-32gb): roofs: needs a memory roof and an fp32 roof");
        QTest::newRow("duplicate key")
            << toBytes(withEntryField(3, QStringLiteral("key"), QStringLiteral("h100-sxm-80gb")))
            << QStringLiteral("T: gpus[3]: key: \"h100-sxm-80gb\" is already an earlier entry's");
        QTest::newRow("key missing") << toBytes(withEntryField(1, QStringLiteral("key"), QJsonValue::Undefined))
                                     << QStringLiteral("T: gpus[1]: key: missing");
        QTest::newRow("reserved key") << toBytes(withEntryField(1, QStringLiteral("key"), QStringLiteral("current")))
                                      << QStringLiteral(
                                             "T: gpus[1]: key: \"current\" is the worker's GPU, not a table key");
        QTest::newRow("name missing") << toBytes(withEntryField(2, QStringLiteral("name"), QJsonValue::Undefined))
                                      << QStringLiteral("T: gpus[2] (h100-sxm-80gb): name: missing");
        QTest::newRow("SMs not whole")
            << toBytes(withEntryField(0, QStringLiteral("sm_count"),
                                      QJsonObject{{QStringLiteral("value"), 80.5},
                                                  {QStringLiteral("source"), QStringLiteral("volta-whitepaper")}}))
            << QStringLiteral("T: gpus[0] (v100-sxm2-32gb): sm_count.value: must be a whole number of SMs, not 80.5");
        QTest::newRow("L2 unit")
            << toBytes(withEntryField(4, QStringLiteral("l2"),
                                      QJsonObject{{QStringLiteral("value"), 96},
                                                  {QStringLiteral("unit"), QStringLiteral("MB")},
                                                  {QStringLiteral("source"), QStringLiteral("ada-whitepaper")}}))
            << QStringLiteral("T: gpus[4] (l40s): l2.unit: \"MB\" is not a unit of a cache size (KiB or MiB)");
        QTest::newRow("L2 without source")
            << toBytes(withEntryField(
                   4, QStringLiteral("l2"),
                   QJsonObject{{QStringLiteral("value"), 96}, {QStringLiteral("unit"), QStringLiteral("MiB")}}))
            << QStringLiteral("T: gpus[4] (l40s): l2.source: missing");
        QTest::newRow("device name not a pattern")
            << toBytes(withEntryField(3, QStringLiteral("device_names"), QJsonArray{QStringLiteral("H200(")}))
            << QStringLiteral("T: gpus[3] (h200-sxm-141gb): device_names[0]: \"H200(\" is not a regular expression: "
                              "missing closing parenthesis at offset 5");
        QTest::newRow("roofs not an array")
            << toBytes(withEntryField(0, QStringLiteral("roofs"), QStringLiteral("fast")))
            << QStringLiteral("T: gpus[0] (v100-sxm2-32gb): roofs: must be an array, not a "
                              "string");
        QJsonObject otherFormat = shippedJson();
        otherFormat.insert(QStringLiteral("format"), 2);
        QTest::newRow("format") << toBytes(otherFormat)
                                << QStringLiteral("T: format: 2 is not a format this version reads (1)");
        QJsonObject noGpus = shippedJson();
        noGpus.insert(QStringLiteral("gpus"), QJsonArray());
        QTest::newRow("no entry") << toBytes(noGpus) << QStringLiteral("T: gpus: no entry");
        QTest::newRow("not JSON") << QByteArray("{\n  \"format\": 1,\n  \"gpus\": [1,, 2]\n}\n")
                                  << QStringLiteral("T:3:15: not JSON: illegal value");
    }

    void badFileIsReportedPrecisely()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, error);
        const GpuTableLoad load = parseGpuTable(json, QStringLiteral("T"));
        QCOMPARE(load.error, error);
        QVERIFY(!load.ok());
        QVERIFY(load.gpus.isEmpty()); // nothing of a bad file is used
    }

    void missingFileIsNamed()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("gpus.json"));
        const GpuTableLoad load = loadGpuTable(path);
        QVERIFY(!load.ok());
        QVERIFY2(load.error.startsWith(path + QStringLiteral(": cannot read the GPU table")), qPrintable(load.error));
    }

    // A user's own table, without compiling: KWB_GPU_TABLE names it.
    void environmentNamesAnotherTable()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("mine.json"));
        QJsonObject mine = shippedJson();
        QJsonArray gpus = mine.value(QLatin1String("gpus")).toArray();
        QJsonObject extra = gpus.at(3).toObject();
        extra.insert(QStringLiteral("key"), QStringLiteral("h200-nvl"));
        extra.insert(QStringLiteral("name"), QStringLiteral("NVIDIA H200 NVL"));
        gpus.append(extra);
        mine.insert(QStringLiteral("gpus"), gpus);
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(toBytes(mine));
        f.close();
        qputenv("KWB_GPU_TABLE", path.toLocal8Bit());
        QCOMPARE(defaultGpuTablePath(), path);
        qunsetenv("KWB_GPU_TABLE");
        const GpuTableLoad load = loadGpuTable(path);
        QVERIFY2(load.ok(), qPrintable(load.error));
        QCOMPARE(load.gpus.size(), gpuTable().size() + 1);
        QCOMPARE(load.gpus.last().name, QStringLiteral("NVIDIA H200 NVL"));
    }

    // device_names: the name CUDA reports picks the table's entry; other boards of the same chip
    // (PCIe, NVL, 40GB, the 4090 D) do not.
    void deviceNamesPickTheEntry_data()
    {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("key");
        QTest::newRow("V100") << QStringLiteral("Tesla V100-SXM2-32GB") << QStringLiteral("v100-sxm2-32gb");
        QTest::newRow("V100 16GB") << QStringLiteral("Tesla V100-SXM2-16GB") << QString();
        QTest::newRow("A100") << QStringLiteral("NVIDIA A100-SXM4-80GB") << QStringLiteral("a100-sxm-80gb");
        QTest::newRow("A100 40GB") << QStringLiteral("NVIDIA A100-SXM4-40GB") << QString();
        QTest::newRow("H100") << QStringLiteral("NVIDIA H100 80GB HBM3") << QStringLiteral("h100-sxm-80gb");
        QTest::newRow("H100 PCIe") << QStringLiteral("NVIDIA H100 PCIe") << QString();
        QTest::newRow("H200") << QStringLiteral("NVIDIA H200") << QStringLiteral("h200-sxm-141gb");
        QTest::newRow("H200 NVL") << QStringLiteral("NVIDIA H200 NVL") << QString();
        QTest::newRow("L40S") << QStringLiteral("NVIDIA L40S") << QStringLiteral("l40s");
        QTest::newRow("L40") << QStringLiteral("NVIDIA L40") << QString();
        QTest::newRow("4090") << QStringLiteral("NVIDIA GeForce RTX 4090") << QStringLiteral("rtx-4090");
        QTest::newRow("4090 D") << QStringLiteral("NVIDIA GeForce RTX 4090 D") << QString();
        QTest::newRow("4090 laptop") << QStringLiteral("NVIDIA GeForce RTX 4090 Laptop GPU") << QString();
        QTest::newRow("nothing") << QString() << QString();
    }

    void deviceNamesPickTheEntry()
    {
        QFETCH(QString, device);
        QFETCH(QString, key);
        const GpuRoofs* g = findGpuForDevice(device);
        QCOMPARE(g ? g->key : QString(), key);
    }

    void v100MatchesItsDatasheet()
    {
        const GpuRoofs* v100 = findGpu(QStringLiteral("v100-sxm2-32gb"));
        QVERIFY(v100);
        QCOMPARE(v100->bandwidthGBps(), 900.0);
        QCOMPARE(v100->fp32Gflops(), 15700.0);
        QCOMPARE(v100->smCount, 80);
        QCOMPARE(v100->l2Bytes, qint64(6) * 1024 * 1024);
        const Roof* fp16 = findRoof(*v100, Roof::Kind::Fp16Tensor, Roof::Origin::Datasheet);
        QVERIFY(fp16);
        QCOMPARE(fp16->value, 125000.0);
        // Volta has neither TF32 nor BF16.
        QVERIFY(v100->roofsOf(Roof::Kind::Tf32Tensor).isEmpty());
        QVERIFY(v100->roofsOf(Roof::Kind::Bf16Tensor).isEmpty());
        QVERIFY(qFuzzyCompare(v100->fp32RidgeIntensity(), 15700.0 / 900.0));
    }

    void hopperTensorPeaksAreDense()
    {
        for (const char* key : {"h100-sxm-80gb", "h200-sxm-141gb"}) {
            const GpuRoofs* g = findGpu(QLatin1String(key));
            QVERIFY(g);
            QCOMPARE(g->fp32Gflops(), 67000.0);
            QCOMPARE(g->smCount, 132);
            // The datasheet prints 989 (TF32) and 1,979 (BF16) TFLOP/s with sparsity.
            QCOMPARE(g->roofsOf(Roof::Kind::Tf32Tensor).value(0).value, 494700.0);
            QCOMPARE(g->roofsOf(Roof::Kind::Bf16Tensor).value(0).value, 989400.0);
        }
        QCOMPARE(findGpu(QStringLiteral("h200-sxm-141gb"))->bandwidthGBps(), 4800.0);
        QCOMPARE(findGpu(QStringLiteral("h100-sxm-80gb"))->bandwidthGBps(), 3350.0);
        QCOMPARE(findGpu(QStringLiteral("a100-sxm-80gb"))->bandwidthGBps(), 2039.0);
        QCOMPARE(findGpu(QStringLiteral("a100-sxm-80gb"))->roofsOf(Roof::Kind::Tf32Tensor).value(0).value, 156000.0);
        QVERIFY(findGpu(QStringLiteral("no-such-gpu")) == nullptr);
    }

    void attainableIsTheMinimumOfTheTwoRoofs()
    {
        const GpuRoofs* h200 = findGpu(QStringLiteral("h200-sxm-141gb"));
        QCOMPARE(h200->attainableGflops(1.0), 4800.0);
        QCOMPARE(h200->attainableGflops(0.25), 1200.0);
        QCOMPARE(h200->attainableGflops(100.0), 67000.0);
        QVERIFY(std::isnan(h200->attainableGflops(0.0)));
        QVERIFY(qFuzzyCompare(h200->ridgeIntensity(989400.0), 989400.0 / 4800.0));
    }

    void workerDeviceResponse()
    {
        // The worker's own response on an H200 (nested ceilings, hbm_theoretical_gbs).
        const GpuRoofs g = fromDeviceResponse(loadChartData(QStringLiteral("device_h200.json")));
        QVERIFY(g.isValid());
        QCOMPARE(g.key, QStringLiteral("current"));
        QCOMPARE(g.name, QStringLiteral("NVIDIA H200"));
        QCOMPARE(g.smCount, 132);
        QCOMPARE(g.l2Bytes, qint64(62914560));

        // Measured roofs are the primary ones, labelled measured, with their method.
        const Roof* mem = g.primaryMemory();
        QCOMPARE(mem->origin, Roof::Origin::Measured);
        QVERIFY(qFuzzyCompare(mem->value, 4265.890857861522));
        QVERIFY(mem->note.contains(QLatin1String("cudaMemcpyAsync")));
        QVERIFY(mem->displayText().endsWith(QLatin1String("(measured)")));
        const Roof* fp32 = g.primaryFp32();
        QCOMPARE(fp32->origin, Roof::Origin::Measured);
        QVERIFY(qFuzzyCompare(fp32->value, 65325.246282100816));
        const Roof* bf16 = findRoof(g, Roof::Kind::Bf16Tensor, Roof::Origin::Measured);
        QVERIFY(bf16);
        QVERIFY(qFuzzyCompare(bf16->value, 616281.7732611952));
        QVERIFY(bf16->note.contains(QLatin1String("mma.sync")));
        QVERIFY(g.roofsOf(Roof::Kind::Tf32Tensor).isEmpty()); // not in this record

        // Theoretical roofs are shown too.
        const Roof* hbm = findRoof(g, Roof::Kind::Memory, Roof::Origin::Theoretical);
        QVERIFY(hbm);
        QVERIFY(qFuzzyCompare(hbm->value, 4814.304));
        const Roof* fp32Theory = findRoof(g, Roof::Kind::Fp32, Roof::Origin::Theoretical);
        QVERIFY(fp32Theory);
        QVERIFY(qFuzzyCompare(fp32Theory->value, 132 * 128 * 2 * 1.98)); // SMs × lanes × 2 × GHz
        QCOMPARE(g.roofsOf(Roof::Kind::Memory).size(), 2);
        QCOMPARE(g.roofsOf(Roof::Kind::Memory).first().origin, Roof::Origin::Measured);
        QVERIFY(qFuzzyCompare(g.fp32RidgeIntensity(), 65325.246282100816 / 4265.890857861522));
    }

    void documentedFlatDeviceResponse()
    {
        // docs/protocol.md §device: flat ceilings and hbm_theoretical_gbps.
        const QJsonObject device{
            {QStringLiteral("available"), true},
            {QStringLiteral("name"), QStringLiteral("NVIDIA A100-SXM4-80GB")},
            {QStringLiteral("cc"), QStringLiteral("8.0")},
            {QStringLiteral("sm_count"), 108},
            {QStringLiteral("sm_clock_khz"), 1410000},
            {QStringLiteral("l2_bytes"), 41943040},
            {QStringLiteral("hbm_theoretical_gbps"), 2039.0},
            {QStringLiteral("ceilings"), QJsonObject{{QStringLiteral("hbm_copy_gbps"), 1720.5},
                                                     {QStringLiteral("fp32_fma_gflops"), 19100.0},
                                                     {QStringLiteral("tensor_tf32_gflops"), 140000.0},
                                                     {QStringLiteral("tensor_bf16_gflops"), 280000.0}}}};
        const GpuRoofs g = fromDeviceResponse(device);
        QVERIFY(g.isValid());
        QCOMPARE(g.bandwidthGBps(), 1720.5);
        QCOMPARE(g.fp32Gflops(), 19100.0);
        QCOMPARE(findRoof(g, Roof::Kind::Tf32Tensor, Roof::Origin::Measured)->value, 140000.0);
        QCOMPARE(findRoof(g, Roof::Kind::Bf16Tensor, Roof::Origin::Measured)->value, 280000.0);
        QCOMPARE(findRoof(g, Roof::Kind::Memory, Roof::Origin::Theoretical)->value, 2039.0);
        // GA100 has 64 FP32 lanes per SM.
        QVERIFY(qFuzzyCompare(findRoof(g, Roof::Kind::Fp32, Roof::Origin::Theoretical)->value, 108 * 64 * 2 * 1.41));
    }

    void withoutCeilingsTheTheoreticalRoofsArePrimary()
    {
        QJsonObject device = loadChartData(QStringLiteral("device_h200.json"));
        device.remove(QStringLiteral("ceilings"));
        const GpuRoofs g = fromDeviceResponse(device);
        QVERIFY(g.isValid());
        QCOMPARE(g.primaryMemory()->origin, Roof::Origin::Theoretical);
        QVERIFY(qFuzzyCompare(g.bandwidthGBps(), 4814.304));
        QCOMPARE(g.primaryFp32()->origin, Roof::Origin::Theoretical);
        QVERIFY(!g.citation.contains(QLatin1String("measured")));
    }

    void failedCeilingsAreLeftOut()
    {
        QJsonObject device = loadChartData(QStringLiteral("device_h200.json"));
        QJsonObject ceilings = device.value(QStringLiteral("ceilings")).toObject();
        ceilings.insert(QStringLiteral("fp32_fma"),
                        QJsonObject{{QStringLiteral("error"), QStringLiteral("no driver")}});
        ceilings.insert(QStringLiteral("tensor_tf32"), QJsonObject{{QStringLiteral("available"), false},
                                                                   {QStringLiteral("reason"), QStringLiteral("x")}});
        device.insert(QStringLiteral("ceilings"), ceilings);
        const GpuRoofs g = fromDeviceResponse(device);
        QCOMPARE(g.primaryFp32()->origin, Roof::Origin::Theoretical);
        QVERIFY(g.roofsOf(Roof::Kind::Tf32Tensor).isEmpty());
        QCOMPARE(g.primaryMemory()->origin, Roof::Origin::Measured);
    }

    void noGpu()
    {
        const GpuRoofs g = fromDeviceResponse(QJsonObject{
            {QStringLiteral("available"), false}, {QStringLiteral("reason"), QStringLiteral("no CUDA device")}});
        QVERIFY(!g.isValid());
        QVERIFY(g.roofs.isEmpty());
        QVERIFY(g.citation.contains(QLatin1String("no CUDA device")));
        QCOMPARE(g.bandwidthGBps(), 0.0);
        QVERIFY(std::isnan(g.attainableGflops(1.0)));
    }

    void lanesPerSm()
    {
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("7.0")), 64);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("8.0")), 64);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("8.6")), 128);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("8.9")), 128);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("9.0")), 128);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("6.1")), 0);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("sm_90")), 0);
        QCOMPARE(fp32FmaLanesPerSm(QString()), 0);
    }
};

QTEST_GUILESS_MAIN(TestGpuTable)
#include "tst_gputable.moc"

// The protocol's one decoder (src/core/protocol): every golden response decodes into its type,
// key fields by hand, the status table, and device facts in both spellings of the HBM key.

#include "core/prompts/promptrenderer.h"
#include "core/protocol/devicefacts.h"
#include "core/protocol/evaluationresult.h"
#include "core/protocol/evaluationstatus.h"
#include "core/protocol/workerresponses.h"
#include "core/tasks/gputable.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>
#include <QTest>

#include <cmath>
#include <limits>

using namespace kwb;

namespace {

QJsonObject golden(const QString& name)
{
    QFile f(QDir(QStringLiteral(KWB_PROTOCOL_GOLDEN_DIR)).filePath(name));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

QJsonObject json(const char* text)
{
    return QJsonDocument::fromJson(QByteArray(text)).object();
}

} // namespace

class TestProtocolDecoder : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void everyGoldenResponseDecodes()
    {
        const QDir dir(QStringLiteral(KWB_PROTOCOL_GOLDEN_DIR));
        const QStringList files = dir.entryList({QStringLiteral("*.response.json")}, QDir::Files, QDir::Name);
        QVERIFY2(files.size() >= 10, qPrintable(dir.path()));
        for (const QString& file : files) {
            const QJsonObject r = golden(file);
            QVERIFY2(!r.isEmpty(), qPrintable(file));
            const ResponseHeader header = decodeHeader(r);
            if (!header.ok) {
                // Refusals of any request (an unknown type included) carry an error code.
                QVERIFY2(!header.errorCode.isEmpty(), qPrintable(file));
                continue;
            }
            switch (responseType(r)) {
            case ResponseType::Hello: QVERIFY2(decodeHello(r).protocol.has_value(), qPrintable(file)); break;
            case ResponseType::Tasks: QVERIFY2(decodeTaskList(r).ok, qPrintable(file)); break;
            case ResponseType::Device: decodeDeviceFacts(r); break;
            case ResponseType::Analyze: QVERIFY2(decodeAnalyze(r).flops > 0, qPrintable(file)); break;
            case ResponseType::Profile: decodeProfile(r); break;
            case ResponseType::Compile: QVERIFY2(decodeCompile(r).okKnown, qPrintable(file)); break;
            case ResponseType::Evaluate: {
                const EvaluationResult e = decodeEvaluation(r);
                QVERIFY2(e.status != EvaluationStatus::Unknown, qPrintable(file + QStringLiteral(": ") + e.statusName));
                QCOMPARE(e.raw, r);
                break;
            }
            case ResponseType::RunReference: decodeReferenceRun(r); break;
            case ResponseType::Shutdown: break;
            case ResponseType::Unknown:
                QFAIL(qPrintable(file + QStringLiteral(": a response type the decoder does not know")));
                break;
            }
        }
    }

    void goldenFieldsByHand()
    {
        const HelloInfo hello = decodeHello(golden(QStringLiteral("01_hello.response.json")));
        QVERIFY(hello.ok);
        QCOMPARE(*hello.protocol, 1);
        QVERIFY(!hello.defaultProfile.isEmpty());
        QVERIFY(hello.profile(hello.defaultProfile));
        QVERIFY(hello.unknownProfileError(hello.defaultProfile).isEmpty());
        QVERIFY(hello.unknownProfileError(QStringLiteral("fastest")).contains(hello.defaultProfile));

        const EvaluationResult format = decodeEvaluation(golden(QStringLiteral("07_evaluate_no_block.response.json")));
        QCOMPARE(format.status, EvaluationStatus::FormatError);
        QCOMPARE(format.stage, QStringLiteral("parse"));
        QVERIFY(format.formatError);
        QCOMPARE(format.formatError->code, QStringLiteral("no_code_block"));
        QVERIFY(!format.compiled());

        const EvaluationResult compile =
            decodeEvaluation(golden(QStringLiteral("08_evaluate_compile_error.response.json")));
        QCOMPARE(compile.status, EvaluationStatus::CompileError);
        QVERIFY(compile.compile);
        QVERIFY(!compile.compile->ok);
        QCOMPARE(compile.compile->arch, QStringLiteral("sm_90"));

        const EvaluationResult noDevice =
            decodeEvaluation(golden(QStringLiteral("09_evaluate_no_device.response.json")));
        QCOMPARE(noDevice.status, EvaluationStatus::NoDevice);
        QVERIFY(noDevice.torchOnly);
        QVERIFY(noDevice.compiled());
        QVERIFY(noDevice.profile);
        QCOMPARE(noDevice.profile->name, QStringLiteral("kernelbench-fp32"));
        QCOMPARE(*noDevice.profile->atol, 1e-4);
        QCOMPARE(*noDevice.profile->l2Flush, true);

        const AnalyzeResult analyze = decodeAnalyze(golden(QStringLiteral("06_analyze_l1_1.response.json")));
        QCOMPARE(analyze.task, QStringLiteral("L1/1"));
        QCOMPARE(analyze.outputShape, (QList<qint64>{4096, 4096}));
        QCOMPARE(analyze.flops, 137438953472.0);
        QCOMPARE(analyze.intensityFused, 137438953472.0 / 201326592.0); // computed: the file has no intensities
        QVERIFY(analyze.complete());
        QVERIFY(analyze.uncountedText().isEmpty());

        const CompileInfo compiled = decodeCompile(golden(QStringLiteral("13_compile.response.json")));
        QVERIFY(compiled.ok);
        QCOMPARE(compiled.kernels, QStringList{QStringLiteral("k")});

        const ResponseHeader unknown = decodeHeader(golden(QStringLiteral("02_unknown_type.response.json")));
        QVERIFY(!unknown.ok);
        QCOMPARE(unknown.errorCode, QStringLiteral("unknown_type"));
    }

    void fullEvaluationWithCandidateEcho()
    {
        const EvaluationResult e = decodeEvaluation(json(R"({"id":6,"type":"evaluate","ok":true,
            "status":"correct","stage":"done","message":"","format_error":null,
            "compile":{"ok":true,"log":"","ms":35.2,"arch":"sm_90","kernels":["bias_relu"],"cached":true},
            "correctness":{"trials":5,"passed":5,"max_abs_diff":1.2e-6,"max_rel_diff":3e-7,"atol":1e-4,"rtol":1e-4,
                           "deterministic":true,"failure":null,
                           "range_trial":{"generator":"randn","atol":0.01,"rtol":0.01,"passed":true,"max_abs_diff":0.001}},
            "timing":{"candidate":{"mean_ms":1.5,"median_ms":1.4,"std_ms":0.1,"min_ms":1.3,"max_ms":1.9,"trials":100},
                      "reference":{"mean_ms":3.0,"median_ms":2.9,"std_ms":0.2,"min_ms":2.8,"max_ms":3.5,"trials":100}},
            "speedup":2.0,"kernels":[{"name":"bias_relu","calls":1,"time_ns":1400,"custom":true}],
            "custom_launches":1,"torch_only":false,"degenerate":null,"reference_outputs_on":"device",
            "stage_ms":{"parse":0.1,"total":900},"worker_healthy":true,
            "notes":[{"code":"unused_import","message":"the answer never uses what it imports from 'os'","line":6},
                     {"code":"kernelbench_only_scale","message":"ran at full scale"},{}],
            "candidate":{"cuda":"__global__ void bias_relu(){}","python":"def forward(x): return x","kernels":["bias_relu"],
                         "source_hash":"abc","cuda_line":3,"python_line":12}})"));
        QCOMPARE(e.status, EvaluationStatus::Correct);
        QVERIFY(e.isCorrect() && e.compiled());
        QVERIFY(e.compile->cached);
        QCOMPARE(*e.compile->ms, 35.2);
        QCOMPARE(e.correctness->passed, 5);
        QCOMPARE(*e.correctness->maxAbsDiff, 1.2e-6);
        QCOMPARE(*e.correctness->deterministic, true);
        QVERIFY(!e.correctness->hasFailure);
        QVERIFY(e.correctness->rangeTrial);
        QCOMPARE(e.correctness->rangeTrial->generator, QStringLiteral("randn"));
        QCOMPARE(e.timing.candidate->meanMs, 1.5);
        QCOMPARE(e.timing.reference->trials, 100);
        QCOMPARE(*e.speedup, 2.0);
        QCOMPARE(e.kernels.size(), 1);
        QVERIFY(e.kernels.first().custom);
        QCOMPARE(*e.customLaunches, 1);
        QVERIFY(!e.degenerate);
        QCOMPARE(e.notes.size(), 2); // an empty note is none
        QCOMPARE(e.notes.at(0).code, QStringLiteral("unused_import"));
        QCOMPARE(e.notes.at(0).line, 6);
        QCOMPARE(e.notes.at(1).message, QStringLiteral("ran at full scale"));
        QCOMPARE(e.notes.at(1).line, 0);
        QCOMPARE(e.referenceOutputsOn, QStringLiteral("device"));
        QCOMPARE(e.stageMs.value(QStringLiteral("total")), 900.0);
        QVERIFY(e.workerHealthy);
        QVERIFY(e.candidate);
        QCOMPARE(e.candidate->sourceHash, QStringLiteral("abc"));
        QCOMPARE(e.candidate->cudaLine, 3);
        QCOMPARE(e.candidate->pythonLine, 12);
        QCOMPARE(e.candidate->kernels, QStringList{QStringLiteral("bias_relu")});

        // Without the echo (workers before it), and a sticky fault.
        const EvaluationResult old = decodeEvaluation(json(
            R"({"status":"runtime_error","stage":"correctness","worker_healthy":false,
                "correctness":{"trials":5,"passed":2,"failure":{"trial":"range","reason":"illegal address"}}})"));
        QVERIFY(!old.candidate);
        QVERIFY(!old.workerHealthy);
        QCOMPARE(old.correctness->failureTrial, QStringLiteral("range"));
        QCOMPARE(old.correctness->failureReason, QStringLiteral("illegal address"));
    }

    void timingMeasurementFields()
    {
        // issue 13: the adaptive method's stop reason, samples, throttled count and interval.
        const QJsonObject r = QJsonDocument::fromJson(R"({"ok":true,"status":"correct","speedup":1.25,
            "timing":{"method":"adaptive","stop_reason":"target_reached","samples":38,"throttled":2,
                      "reference_reused":120,
                      "speedup_interval":{"value":1.25,"low":1.2421,"high":1.2579,"level":0.95,
                                          "relative_half_width":0.0063,"samples":38},
                      "candidate":{"mean_ms":0.8,"trials":38},"reference":{"mean_ms":1.0,"trials":158}}})")
                                  .object();
        const EvaluationResult e = decodeEvaluation(r);
        QCOMPARE(e.timing.method, QStringLiteral("adaptive"));
        QCOMPARE(e.timing.stopReason, QStringLiteral("target_reached"));
        QCOMPARE(e.timing.samples.value_or(-1), 38);
        QCOMPARE(e.timing.throttled.value_or(-1), 2);
        QCOMPARE(e.timing.referenceReused, 120);
        QVERIFY(e.timing.interval);
        QCOMPARE(e.timing.interval->low, 1.2421);
        QCOMPARE(e.timing.interval->high, 1.2579);
        QCOMPARE(e.timing.interval->relativeHalfWidth.value_or(-1), 0.0063);
        QCOMPARE(e.timing.interval->samples, 38);
        QCOMPARE(e.timing.candidate->trials, 38);
        QVERIFY(e.trustedSpeedupInterval());
        // Printed so wherever a speed-up is (pages, tables, the command line).
        QCOMPARE(formatSpeedup(e), QStringLiteral("1.25\u00D7 [1.24\u20131.26]"));
        QCOMPARE(formatSpeedup(e, 3), QStringLiteral("1.250\u00D7 [1.242\u20131.258]"));
        QCOMPARE(formatSpeedup(1.5, std::nullopt), QStringLiteral("1.50\u00D7"));
        QCOMPARE(formatSpeedup(2.0, SpeedupInterval{1.5, std::numeric_limits<double>::infinity()}),
                 QStringLiteral("2.00\u00D7 [1.50\u2013\u221E]"));
        QVERIFY(formatSpeedup(std::nan(""), std::nullopt).isEmpty());
        // Below the roofline floor the speed-up does not count, nor does its interval.
        QJsonObject floor = r;
        floor.insert(QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor")});
        QVERIFY(!decodeEvaluation(floor).trustedSpeedupInterval());
        // An unbounded interval (one pair: high is null) is no interval; an old worker has none.
        QJsonObject one = r;
        QJsonObject timing = one.value(QStringLiteral("timing")).toObject();
        timing.insert(QStringLiteral("speedup_interval"),
                      QJsonObject{{QStringLiteral("low"), 0}, {QStringLiteral("high"), QJsonValue()}});
        one.insert(QStringLiteral("timing"), timing);
        QVERIFY(!decodeEvaluation(one).timing.interval);
        const EvaluationResult old =
            decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}});
        QVERIFY(!old.timing.interval);
        QVERIFY(formatSpeedup(old).isEmpty()); // no speed-up, nothing to print
        QVERIFY(old.timing.method.isEmpty());
        QVERIFY(!old.timing.samples);
    }

    void trafficProfileDecodes()
    {
        // Issue 15: `traffic` (kTrafficKey) only where asked; profiled bytes, a failure's reason,
        // and malformed records (a misspelt key, a profile without bytes) flagged, never measured.
        QCOMPARE(QString::fromLatin1(kTrafficKey), QStringLiteral("traffic"));
        QCOMPARE(QString::fromLatin1(kProfileTrafficKey), QStringLiteral("profile_traffic"));
        const EvaluationResult none = decodeEvaluation(json(R"({"status":"correct"})"));
        QVERIFY(!none.traffic);
        QVERIFY(!none.measuredDramBytes());
        QCOMPARE(formatTraffic(none.traffic), QString());

        const EvaluationResult measured = decodeEvaluation(json(R"({"status":"correct","traffic":{"profiled":true,
            "dram_bytes":8589934592,"dram_read_bytes":4294967296,"dram_write_bytes":4294967296,"kernels":1,"passes":1,
            "method":"cupti_range_profiler","l2":"cold"}})"));
        QVERIFY(measured.traffic);
        QVERIFY(measured.traffic->profiled);
        QCOMPARE(measured.measuredDramBytes().value_or(0), 8589934592.0);
        QCOMPARE(measured.traffic->readBytes.value_or(0), 4294967296.0);
        QCOMPARE(measured.traffic->kernels.value_or(0), 1);
        QCOMPARE(measured.traffic->method, QStringLiteral("cupti_range_profiler"));
        QCOMPARE(formatTraffic(measured.traffic), QStringLiteral("measured 8.59 GB of HBM traffic (1 kernel)"));

        const EvaluationResult failed = decodeEvaluation(json(R"({"status":"correct","traffic":{"profiled":false,
            "reason":"cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}})"));
        QVERIFY(failed.isCorrect()); // the verdict is the status's, whatever the profile did
        QVERIFY(!failed.measuredDramBytes());
        QCOMPARE(formatTraffic(failed.traffic),
                 QStringLiteral("not profiled: cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));

        const EvaluationResult misspelt = decodeEvaluation(json(R"({"status":"correct","traffic":{"profiled":true,
            "dram_byte":8589934592}})"));
        QVERIFY(misspelt.traffic);
        QVERIFY(!misspelt.measuredDramBytes());
        QVERIFY2(misspelt.traffic->reason.contains(QLatin1String("unknown key \"dram_byte\"")),
                 qPrintable(misspelt.traffic->reason));
        for (const char* text : {R"({"status":"correct","traffic":{"profiled":true}})",
                                 R"({"status":"correct","traffic":{"profiled":true,"dram_bytes":0}})",
                                 R"({"status":"correct","traffic":{"profiled":true,"dram_bytes":"8e9"}})",
                                 R"({"status":"correct","traffic":[8e9]})"}) {
            const EvaluationResult e = decodeEvaluation(json(text));
            QVERIFY2(e.traffic && !e.measuredDramBytes(), text);
            QVERIFY2(e.traffic->reason.startsWith(QLatin1String("malformed traffic record")), text);
        }
        // The golden pair: asked on the CPU, correct, not profiled, with the reason.
        const EvaluationResult golden16 =
            decodeEvaluation(golden(QStringLiteral("16_evaluate_profile_traffic.response.json")));
        QVERIFY(golden16.isCorrect());
        QVERIFY(golden16.traffic);
        QVERIFY(!golden16.traffic->profiled);
    }

    void supervisorFailureDecodes()
    {
        const EvaluationResult e =
            decodeEvaluation(failureResult(QStringLiteral("timeout"), QStringLiteral("no response")));
        QCOMPARE(e.status, EvaluationStatus::Timeout);
        QCOMPARE(e.message, QStringLiteral("no response"));
        QVERIFY(!e.compiled());
        QVERIFY(decodeEvaluation(json(R"({"status":"timeout","compile":{"ok":true}})")).compiled());
        // no_device: compiled where the compile ran (NVRTC, an extension built without a GPU), not
        // where the machine could not build the answer (a KernelBench-format answer, torch without CUDA).
        QVERIFY(decodeEvaluation(json(R"({"status":"no_device","compile":{"ok":true}})")).compiled());
        QVERIFY(!decodeEvaluation(json(R"({"status":"no_device","compile":{"ok":false}})")).compiled());
        QVERIFY(!decodeEvaluation(json(R"({"status":"no_device"})")).compiled());
        const EvaluationResult future = decodeEvaluation(json(R"({"status":"quantum_error"})"));
        QCOMPARE(future.status, EvaluationStatus::Unknown);
        QCOMPARE(future.statusName, QStringLiteral("quantum_error")); // kept for display
    }

    void statusTableIsComplete()
    {
        const QList<EvaluationStatusInfo>& table = evaluationStatusTable();
        QCOMPARE(table.size(), int(EvaluationStatus::OutOfMemoryElsewhere) + 1);
        QSet<QString> names;
        for (int i = 0; i < table.size(); ++i) {
            const EvaluationStatusInfo& info = table.at(i);
            QCOMPARE(int(info.status), i); // one row per enumerator, in enum order
            QVERIFY(*info.label);
            QVERIFY((info.colour >> 24) == 0xff); // opaque
            if (info.status == EvaluationStatus::Unknown) {
                QCOMPARE(wireName(info.status), QString());
                continue;
            }
            const QString name = wireName(info.status);
            QVERIFY2(!names.contains(name), qPrintable(name));
            names.insert(name);
            QCOMPARE(evaluationStatusFromWire(name), info.status); // round trip
        }
        for (const char* documented :
             {"format_error", "compile_error", "rejected", "runtime_error", "incorrect", "correct", "no_device",
              "timeout", "crashed", "start_failed", "worker_lost", "resource_limit"})
            QVERIFY2(names.contains(QLatin1String(documented)), documented);
        QCOMPARE(evaluationStatusFromWire(QString()), EvaluationStatus::Unknown);

        QCOMPARE(statusCategory(EvaluationStatus::Correct), StatusCategory::Success);
        for (EvaluationStatus s :
             {EvaluationStatus::NoDevice, EvaluationStatus::StartFailed, EvaluationStatus::WorkerLost})
            QCOMPARE(statusCategory(s), StatusCategory::MachineFault);
        for (EvaluationStatus s : {EvaluationStatus::Timeout, EvaluationStatus::Crashed, EvaluationStatus::FormatError,
                                   EvaluationStatus::CompileError, EvaluationStatus::Rejected,
                                   EvaluationStatus::RuntimeError, EvaluationStatus::Incorrect})
            QCOMPARE(statusCategory(s), StatusCategory::ModelFault);
        QVERIFY(isMachineFailure(QStringLiteral("worker_lost")));
        QVERIFY(isMachineFailure(QStringLiteral("start_failed")));
        QVERIFY(!isMachineFailure(QStringLiteral("crashed")));
        QCOMPARE(statusColourName(EvaluationStatus::Correct), QStringLiteral("#1a7f37"));

        // `rejected` comes before NVRTC (an include outside the toolkit) or after it (the
        // host-code sandbox): only compile.ok says whether it compiled.
        const auto rejected = [](bool ok) {
            return decodeEvaluation(QJsonObject{{QStringLiteral("ok"), true},
                                                {QStringLiteral("status"), QStringLiteral("rejected")},
                                                {QStringLiteral("compile"), QJsonObject{{QStringLiteral("ok"), ok}}}});
        };
        QVERIFY(!rejected(false).compiled());
        QVERIFY(rejected(true).compiled());
    }

    void deviceFactsBothSpellings_data()
    {
        QTest::addColumn<QByteArray>("device");
        // What every database of the study holds: only the worker's old spelling.
        QTest::newRow("old database: _gbs only")
            << QByteArray(R"({"available":true,"name":"NVIDIA H200","cc":"9.0","arch":"sm_90","sm_count":132,
                             "sm_clock_khz":1980000,"hbm_theoretical_gbs":4800.0})");
        QTest::newRow("documented: _gbps only")
            << QByteArray(R"({"available":true,"name":"NVIDIA H200","cc":"9.0","arch":"sm_90","sm_count":132,
                             "sm_clock_khz":1980000,"hbm_theoretical_gbps":4800.0})");
        QTest::newRow("both, as workers send now")
            << QByteArray(R"({"available":true,"name":"NVIDIA H200","cc":"9.0","arch":"sm_90","sm_count":132,
                             "sm_clock_khz":1980000,"hbm_theoretical_gbps":4800.0,"hbm_theoretical_gbs":4800.0})");
    }

    void deviceFactsBothSpellings()
    {
        QFETCH(QByteArray, device);
        const QJsonObject raw = QJsonDocument::fromJson(device).object();
        const DeviceFacts facts = decodeDeviceFacts(raw);
        QVERIFY(facts.available);
        QCOMPARE(facts.hbmTheoreticalGBps, 4800.0);
        QCOMPARE(facts.bandwidthGBps(), 4800.0);
        QCOMPARE(facts.fp32Gflops(), 132 * 128 * 2.0 * 1980000 * 1e-6);
        QVERIFY(fromDeviceResponse(raw).isValid());
        // The prompt states the bandwidth and ridge point (the bug: "unknown" with _gbs only).
        const QJsonObject context = PromptRenderer::buildContext({}, {}, {}, raw);
        const QJsonObject d = context.value(QStringLiteral("device")).toObject();
        QVERIFY2(d.value(QStringLiteral("hbm_gbps")).toString().startsWith(QStringLiteral("4800 GB/s")),
                 qPrintable(d.value(QStringLiteral("hbm_gbps")).toString()));
        QVERIFY(d.value(QStringLiteral("ridge_point")).toString() != QStringLiteral("unknown"));
    }

    void deviceCeilingsFlatAndNested()
    {
        const DeviceFacts flat = decodeDeviceFacts(json(
            R"({"available":true,"ceilings":{"hbm_copy_gbps":4000,"fp32_fma_gflops":60000,"tensor_bf16_gflops":700000}})"));
        QCOMPARE(flat.hbmCopy.value, 4000.0);
        QCOMPARE(flat.fp32Fma.value, 60000.0);
        QCOMPARE(flat.tensorBf16.value, 700000.0);
        QVERIFY(!flat.tensorTf32.present());
        const DeviceFacts nested = decodeDeviceFacts(json(
            R"({"available":true,"ceilings":{"hbm_copy":{"gbs_best":4100,"method":"memcpy"},"fp32_fma":{"gflops_best":61000}}})"));
        QCOMPARE(nested.hbmCopy.value, 4100.0);
        QCOMPARE(nested.hbmCopy.method, QStringLiteral("memcpy"));
        QCOMPARE(nested.bandwidthGBps(), 4100.0);
        QCOMPARE(nested.fp32Fma.value, 61000.0);
        const DeviceFacts none = decodeDeviceFacts(json(R"({"available":false,"reason":"no driver"})"));
        QVERIFY(!none.available);
        QCOMPARE(none.reason, QStringLiteral("no driver"));
    }

    // The quiet lock as hello says it: a path (held), null (none: no lock, or one the worker could
    // not open), or nothing (an older worker).
    void helloQuietLock()
    {
        const HelloInfo held =
            decodeHello(json(R"({"ok":true,"protocol":1,"gpu_quiet_lock":"/run/kwb-gpu/gpu0.quiet"})"));
        QCOMPARE(held.quietLock, QStringLiteral("/run/kwb-gpu/gpu0.quiet"));
        QVERIFY(held.quietLockAnnounced);
        const HelloInfo none = decodeHello(json(
            R"({"ok":true,"protocol":1,"gpu_quiet_lock":null,"gpu_quiet_lock_error":"cannot open /x: No such file or directory"})"));
        QVERIFY(none.quietLock.isEmpty());
        QVERIFY(none.quietLockAnnounced);
        const HelloInfo older = decodeHello(json(R"({"ok":true,"protocol":1})"));
        QVERIFY(older.quietLock.isEmpty());
        QVERIFY(!older.quietLockAnnounced);
    }

    void helloProfiles()
    {
        const HelloInfo listed = decodeHello(json(R"({"ok":true,"protocol":1,"profiles":[
            {"name":"kernelbench","atol":1e-4,"rtol":1e-4,"l2_flush":true,"timing_trials":100,"warmup":3},
            {"name":"kernelbench-v0.1","atol":1e-2,"rtol":1e-2,"l2_flush":false}]})"));
        QCOMPARE(listed.profileNames(),
                 (QStringList{QStringLiteral("kernelbench"), QStringLiteral("kernelbench-v0.1")}));
        QCOMPARE(*listed.profile(QStringLiteral("kernelbench-v0.1"))->atol, 1e-2);
        QCOMPARE(*listed.profile(QStringLiteral("kernelbench"))->timingTrials, 100);
        const HelloInfo keyed =
            decodeHello(json(R"({"ok":true,"protocol":1,"profiles":{"kernelbench":{"tf32":false}}})"));
        QCOMPARE(keyed.profileNames(), QStringList{QStringLiteral("kernelbench")});
        QCOMPARE(*keyed.profile(QStringLiteral("kernelbench"))->tf32, false);
        QVERIFY(decodeHello(json(R"({"ok":true,"protocol":1})")).profiles.isEmpty());
        // Any name the worker announces is known, none other; a worker that announces none is
        // not second-guessed (it refuses an unknown profile itself).
        const HelloInfo announced = decodeHello(json(R"({"ok":true,"protocol":1,"default_profile":"kernelbench-fp32",
            "profiles":[{"name":"kernelbench-fp32"},{"name":"kernelbench"}]})"));
        QCOMPARE(announced.defaultProfile, QStringLiteral("kernelbench-fp32"));
        QVERIFY(announced.unknownProfileError(QStringLiteral("kernelbench-fp32")).isEmpty());
        QVERIFY(announced.unknownProfileError(QStringLiteral("kernelbench-v0.1"))
                    .contains(QLatin1String("kernelbench-fp32, kernelbench")));
        QVERIFY(decodeHello(json(R"({"ok":true,"protocol":1})")).unknownProfileError(QStringLiteral("x")).isEmpty());
    }

    void analyzeSplitAndProfileIndex()
    {
        const AnalyzeResult a = decodeAnalyze(json(R"({"task":"L2/1","ops":[{"index":0,"op":"aten::max",
            "output":[2],"output_count":2,"bytes":8}],"bytes_unfused":8,"bytes_fused":6,"input_bytes":4,
            "param_bytes":0,"output_bytes":2})"));
        QVERIFY(a.hasOps && !a.failed && a.hasBytesUnfused);
        QCOMPARE(a.ops.first().outputCount, 2);
        QCOMPARE(*a.inputBytes, 4.0);
        QCOMPARE(*a.outputBytes, 2.0);
        QVERIFY(!a.boundFlops); // an older worker's
        QCOMPARE(*decodeAnalyze(json(R"({"task":"L2/1","flops":9,"bound_flops":3})")).boundFlops, 3.0);
        const AnalyzeResult failed =
            decodeAnalyze(json(R"({"ok":false,"error":{"code":"task_error","message":"boom"}})"));
        QVERIFY(failed.failed && !failed.hasOps);
        QCOMPARE(failed.errorMessage, QStringLiteral("boom"));
        // Ops the worker could not count: the totals are incomplete, and say which ops they miss.
        const AnalyzeResult partial = decodeAnalyze(json(R"({"task":"L1/9","flops":20,"uncounted":[
            {"index":1,"op":"aten::kthvalue","line":3,"reason":"no rule","shape_known":false},
            {"index":2,"op":"aten::view","reason":"input of unknown shape"},
            {"index":4,"op":"aten::kthvalue","line":7,"reason":"no rule","shape_known":true}]})"));
        QVERIFY(!partial.complete());
        QCOMPARE(partial.uncounted.size(), 3);
        QCOMPARE(partial.uncounted.at(0).op, QStringLiteral("aten::kthvalue"));
        QCOMPARE(partial.uncounted.at(0).line, 3);
        QCOMPARE(partial.uncounted.at(1).line, 0);
        QCOMPARE(partial.uncounted.at(1).index, 2);
        QVERIFY(!partial.uncounted.at(0).shapeKnown && partial.uncounted.at(2).shapeKnown);
        QCOMPARE(partial.uncounted.at(1).reason, QStringLiteral("input of unknown shape"));
        QCOMPARE(partial.uncountedText(), QStringLiteral("cannot count: aten::kthvalue, aten::view"));
        // A profile op without an index was launched outside any top-level op.
        QCOMPARE(decodeProfile(json(R"({"ops":[{"op":"x","time_ns":5}]})")).ops.first().index, -1);
    }

    void taskShapeSets()
    {
        // A tasks entry as src/worker/tasks/task.cpp writes it: KernelBench's shape, then the file's sets.
        const TaskList list = decodeTaskList(json(R"({"ok":true,"errors":[],"tasks":[{"id":"L2/1",
            "dims":[{"name":"N","full":128,"smoke":2},{"name":"H","full":128,"smoke":12}],
            "shape_sets":[
              {"name":"kernelbench","held_out":false,"dims":[{"name":"N","full":128,"smoke":2},{"name":"H","full":128,"smoke":12}]},
              {"name":"odd","held_out":false,"dims":[{"name":"N","full":127,"smoke":2},{"name":"H","full":127,"smoke":11}]},
              {"name":"held_out","held_out":true,"dims":[{"name":"N","full":128,"smoke":2},{"name":"H","full":97,"smoke":15}]}]},
            {"id":"L3/35","kernelbench_only":"an LSTM","shape_sets":[]}]})"));
        QVERIFY(list.ok);
        const TaskSpec& t = list.tasks.first();
        QCOMPARE(t.shapeSets.size(), 3);
        QCOMPARE(t.shapeSets.at(0).name, QStringLiteral("kernelbench"));
        QCOMPARE(t.shapeSets.at(1).dims.at(1).smoke, qint64(11));
        QVERIFY(!t.shapeSets.at(1).heldOut && t.shapeSets.at(2).heldOut);
        QCOMPARE(t.shapeSets.at(0).differencesFrom(t.dims, false), QString());
        QCOMPARE(t.shapeSets.at(1).differencesFrom(t.dims, false), QStringLiteral("N=127, H=127"));
        QCOMPARE(t.shapeSets.at(1).differencesFrom(t.dims, true), QStringLiteral("H=11"));
        QCOMPARE(t.shapeSets.at(2).differencesFrom(t.dims, false), QStringLiteral("H=97"));
        QVERIFY(list.tasks.at(1).shapeSets.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestProtocolDecoder)
#include "tst_protocoldecoder.moc"

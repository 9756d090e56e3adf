// The client side of docs/protocol.md: encoding, line splitting, limits, the terminal error state,
// the version check, and the golden responses under tests/protocol/ that the worker's tests
// produce from the same files.

#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponse.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using namespace kwb;

class TestProtocolCodec : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void encodeIsOneCompactLine()
    {
        const QJsonObject request{{QStringLiteral("id"), 7},
                                  {QStringLiteral("type"), QStringLiteral("evaluate")},
                                  {QStringLiteral("answer"), QStringLiteral("line one\nline two\n```cuda\n```")}};
        QString error;
        const QByteArray line = ProtocolCodec::encodeRequest(request, &error);
        QVERIFY(error.isEmpty());
        QVERIFY(line.endsWith('\n'));
        QCOMPARE(line.count('\n'), 1); // newlines inside strings are escaped
        QCOMPARE(QJsonDocument::fromJson(line).object(), request);
    }

    void encodeRefusesOversizedRequest()
    {
        const QJsonObject request{{QStringLiteral("type"), QStringLiteral("evaluate")},
                                  {QStringLiteral("answer"), QString(kMaxLineBytes, QLatin1Char('a'))}};
        QString error;
        QVERIFY(ProtocolCodec::encodeRequest(request, &error).isEmpty());
        QVERIFY2(error.contains(QLatin1String("16.0 MiB")), qPrintable(error));
    }

    void decodeSplitsLines_data()
    {
        QTest::addColumn<QList<QByteArray>>("chunks");
        QTest::addColumn<int>("responses");

        QTest::newRow("one line") << QList<QByteArray>{"{\"id\":1,\"ok\":true}\n"} << 1;
        QTest::newRow("two lines in one chunk") << QList<QByteArray>{"{\"id\":1}\n{\"id\":2}\n"} << 2;
        QTest::newRow("line split across chunks") << QList<QByteArray>{"{\"id\":", "1,\"ok\":", "true}", "\n"} << 1;
        QTest::newRow("unfinished line waits") << QList<QByteArray>{"{\"id\":1}\n{\"id\":"} << 1;
        QTest::newRow("CRLF tolerated") << QList<QByteArray>{"{\"id\":1}\r\n"} << 1;
        QTest::newRow("blank lines skipped") << QList<QByteArray>{"\n\n{\"id\":1}\n\n"} << 1;
        QTest::newRow("UTF-8 text") << QList<QByteArray>{"{\"log\":\"\xc3\xa9\xe2\x9c\x93\"}\n"} << 1;
    }

    void decodeSplitsLines()
    {
        QFETCH(QList<QByteArray>, chunks);
        QFETCH(int, responses);
        ResponseDecoder decoder;
        QList<QJsonObject> decoded;
        for (const QByteArray& chunk : chunks) {
            QVERIFY(decoder.feed(chunk));
            decoded += decoder.takeResponses();
        }
        QVERIFY(!decoder.hasFailed());
        QCOMPARE(decoded.size(), responses);
    }

    void decodeFailsTerminally_data()
    {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<int>("goodBefore");
        QTest::addColumn<QString>("reason");

        QTest::newRow("not JSON") << QByteArray("this is not { json\n") << 0 << QStringLiteral("broken response line");
        QTest::newRow("array, not object") << QByteArray("[1,2]\n") << 0 << QStringLiteral("not an object");
        QTest::newRow("number (Qt rejects bare scalars)")
            << QByteArray("42\n") << 0 << QStringLiteral("broken response line");
        QTest::newRow("truncated object") << QByteArray("{\"id\":1,\n") << 0 << QStringLiteral("broken response line");
        QTest::newRow("good line, then a broken one")
            << QByteArray("{\"id\":1}\n{oops}\n{\"id\":2}\n") << 1 << QStringLiteral("broken response line");
    }

    void decodeFailsTerminally()
    {
        QFETCH(QByteArray, input);
        QFETCH(int, goodBefore);
        QFETCH(QString, reason);
        ResponseDecoder decoder;
        QVERIFY(!decoder.feed(input));
        QVERIFY(decoder.hasFailed());
        QVERIFY2(decoder.errorString().contains(reason), qPrintable(decoder.errorString()));
        QCOMPARE(decoder.takeResponses().size(), goodBefore);
        // Terminal: a valid line afterwards is not decoded.
        QVERIFY(!decoder.feed("{\"id\":3}\n"));
        QVERIFY(decoder.takeResponses().isEmpty());
        decoder.reset();
        QVERIFY(decoder.feed("{\"id\":3}\n"));
        QCOMPARE(decoder.takeResponses().size(), 1);
    }

    void decodeEnforcesLineLimit()
    {
        ResponseDecoder decoder(64);
        QVERIFY(decoder.feed("{\"id\":1}\n"));
        QVERIFY(!decoder.feed(QByteArray(70, 'x'))); // no newline yet, already over the limit
        QVERIFY(decoder.errorString().contains(QLatin1String("exceeds the limit")));

        ResponseDecoder whole(64);
        QVERIFY(!whole.feed("{\"pad\":\"" + QByteArray(80, 'x') + "\"}\n"));
        QVERIFY(whole.hasFailed());

        ResponseDecoder exact(16);
        QVERIFY(exact.feed("{\"a\":\"1234567\"}\n")); // 15 bytes and the newline: at the limit
        QCOMPARE(exact.takeResponses().size(), 1);
    }

    void defaultLimitIs16MiB()
    {
        QCOMPARE(kMaxLineBytes, qsizetype(16) * 1024 * 1024);
        ResponseDecoder decoder;
        const QByteArray big = "{\"log\":\"" + QByteArray(15 * 1024 * 1024, 'x') + "\"}\n";
        QVERIFY(decoder.feed(big));
        QCOMPARE(decoder.takeResponses().size(), 1);
    }

    void helloVersionCheck_data()
    {
        QTest::addColumn<QByteArray>("hello");
        QTest::addColumn<QString>("refusal"); // empty: accepted

        QTest::newRow("protocol 1") << QByteArray(R"({"id":1,"type":"hello","ok":true,"protocol":1})") << QString();
        QTest::newRow("newer protocol") << QByteArray(R"({"id":1,"type":"hello","ok":true,"protocol":2})")
                                        << QStringLiteral("newer than this program's protocol 1");
        QTest::newRow("no protocol") << QByteArray(R"({"id":1,"type":"hello","ok":true})")
                                     << QStringLiteral("states no protocol version");
        QTest::newRow("protocol as text") << QByteArray(R"({"id":1,"type":"hello","ok":true,"protocol":"1"})")
                                          << QStringLiteral("states no protocol version");
        QTest::newRow("protocol 0") << QByteArray(R"({"id":1,"type":"hello","ok":true,"protocol":0})")
                                    << QStringLiteral("invalid protocol version");
        QTest::newRow("not ok")
            << QByteArray(R"({"id":1,"type":"hello","ok":false,"error":{"code":"internal","message":"no tasks dir"}})")
            << QStringLiteral("refused hello: no tasks dir");
    }

    void helloVersionCheck()
    {
        QFETCH(QByteArray, hello);
        QFETCH(QString, refusal);
        const QString result = ProtocolCodec::checkHello(QJsonDocument::fromJson(hello).object());
        if (refusal.isEmpty())
            QVERIFY2(result.isEmpty(), qPrintable(result));
        else
            QVERIFY2(result.contains(refusal), qPrintable(result));
    }

    void errorFields()
    {
        const QJsonObject response =
            QJsonDocument::fromJson(
                R"({"id":4,"type":"analyze","ok":false,"error":{"code":"unknown_task","message":"no task L9/9"}})")
                .object();
        QCOMPARE(ProtocolCodec::errorCode(response), QStringLiteral("unknown_task"));
        QCOMPARE(ProtocolCodec::errorMessage(response), QStringLiteral("no task L9/9"));
        QVERIFY(ProtocolCodec::errorCode(QJsonObject{{QStringLiteral("ok"), true}}).isEmpty());
    }

    // docs/protocol.md: "the core's tests decode each response" of the shared golden files.
    void goldenResponsesDecode()
    {
        // The patterns replayed on any machine and the whole responses recorded (tests/protocol/README.md).
        const QDir dir(QStringLiteral(KWB_PROTOCOL_GOLDEN_DIR));
        QStringList files = dir.entryList({QStringLiteral("*.response.json")}, QDir::Files, QDir::Name);
        for (const QString& name : QDir(dir.filePath(QStringLiteral("recorded")))
                                       .entryList({QStringLiteral("*.response.json")}, QDir::Files, QDir::Name))
            files << QStringLiteral("recorded/") + name;
        QVERIFY(files.size() > 20);
        for (const QString& name : files) {
            QFile file(dir.filePath(name));
            QVERIFY(file.open(QIODevice::ReadOnly));
            // A golden file may be pretty-printed; on the wire it is one compact line.
            const QJsonDocument document = QJsonDocument::fromJson(file.readAll());
            QVERIFY2(document.isObject(), qPrintable(name));
            ResponseDecoder decoder;
            QVERIFY2(decoder.feed(document.toJson(QJsonDocument::Compact) + '\n'), qPrintable(name));
            const QList<QJsonObject> responses = decoder.takeResponses();
            QCOMPARE(responses.size(), 1);
            const QJsonObject response = responses.first();
            QVERIFY2(response.contains(QLatin1String("id")), qPrintable(name));
            QVERIFY2(response.value(QLatin1String("ok")).isBool(), qPrintable(name));
            if (!response.value(QLatin1String("ok")).toBool())
                QVERIFY2(!ProtocolCodec::errorCode(response).isEmpty(), qPrintable(name));
            if (response.value(QLatin1String("type")) == QLatin1String("hello"))
                QVERIFY2(ProtocolCodec::checkHello(response).isEmpty(), qPrintable(name));
            // Decoded once by its type (core/protocol/workerresponse.h): the body its type names is
            // there for an answer, none for a refusal (but a refused evaluate, which says why).
            const WorkerResponse typed = decodeWorkerResponse(response);
            QCOMPARE(typed.raw, response);
            QCOMPARE(typed.ok(), response.value(QLatin1String("ok")).toBool());
            const int bodies = int(typed.hello.has_value()) + int(typed.tasks.has_value()) +
                               int(typed.device.has_value()) + int(typed.analyze.has_value()) +
                               int(typed.profile.has_value()) + int(typed.compile.has_value()) +
                               int(typed.evaluation.has_value()) + int(typed.reference.has_value());
            const bool hasBody = typed.type != ResponseType::Unknown && typed.type != ResponseType::Shutdown &&
                                 (typed.ok() || typed.type == ResponseType::Evaluate);
            QVERIFY2(bodies == (hasBody ? 1 : 0), qPrintable(name));
        }
    }

    // The typed builders (core/protocol/workerrequests.h) write the golden requests the worker's
    // tests answer: the same keys and values, the id aside (the supervisor adds it).
    void buildersWriteTheGoldenRequests()
    {
        const QDir dir(QStringLiteral(KWB_PROTOCOL_GOLDEN_DIR));
        const auto golden = [&dir](const char* name) {
            QFile file(dir.filePath(QString::fromLatin1(name)));
            if (!file.open(QIODevice::ReadOnly))
                qFatal("cannot read %s", name);
            QJsonObject request = QJsonDocument::fromJson(file.readAll()).object();
            request.remove(QStringLiteral("id"));
            return request;
        };
        const QString answer = golden("08_evaluate_compile_error.request").value(QLatin1String("answer")).toString();
        QCOMPARE(WorkerRequests::tasks(), golden("11_tasks.request"));
        QCOMPARE(WorkerRequests::analyze(QStringLiteral("L1/1"), QStringLiteral("full")),
                 golden("06_analyze_l1_1.request"));
        QCOMPARE(WorkerRequests::analyze(QStringLiteral("L9/99"), QString()), golden("05_unknown_task.request"));
        WorkerRequests::Evaluate evaluate;
        evaluate.task = QStringLiteral("L1/5");
        evaluate.answer = answer;
        evaluate.device = QStringLiteral("none");
        evaluate.arch = QStringLiteral("sm_90");
        QCOMPARE(WorkerRequests::evaluate(evaluate), golden("08_evaluate_compile_error.request"));
        evaluate.answer = golden("12_unknown_profile.request").value(QLatin1String("answer")).toString();
        evaluate.device.clear();
        evaluate.arch.clear();
        evaluate.profile = QStringLiteral("fastest");
        QCOMPARE(WorkerRequests::evaluate(evaluate), golden("12_unknown_profile.request"));
        const QJsonObject compileGolden = golden("15_compile_answer.request");
        WorkerRequests::Compile compile;
        compile.answer = compileGolden.value(QLatin1String("answer")).toString();
        compile.arch = QStringLiteral("sm_90");
        QCOMPARE(WorkerRequests::compile(compile), compileGolden);
        // What the window and kwb ask a device for, and the evaluate fields a run adds.
        QCOMPARE(WorkerRequests::device(true),
                 (QJsonObject{{QStringLiteral("type"), QStringLiteral("device")}, {QStringLiteral("ceilings"), true}}));
        evaluate.seed = 42;
        evaluate.timingTrials = 7;
        evaluate.profileTraffic = true;
        evaluate.codeBlock = QStringLiteral("last");
        const QJsonObject withAll = WorkerRequests::evaluate(evaluate);
        QCOMPARE(withAll.value(QLatin1String("seed")).toInt(), 42);
        QCOMPARE(withAll.value(QLatin1String("timing_trials")).toInt(), 7);
        QCOMPARE(withAll.value(QLatin1String("profile_traffic")).toBool(), true);
        QCOMPARE(withAll.value(QLatin1String("code_block")).toString(), QStringLiteral("last"));
        // The module EvaluationQueue compiled ahead goes with the request, its four fields together.
        QVERIFY(!withAll.contains(QLatin1String("cubin_b64")));
        evaluate.module = WorkerRequests::CompiledModule{QStringLiteral("AAAA"), QStringLiteral("sm_90"),
                                                         QStringLiteral("c0ffee"), QStringLiteral("ptxas info")};
        const QJsonObject withModule = WorkerRequests::evaluate(evaluate);
        QCOMPARE(withModule.value(QLatin1String("cubin_b64")).toString(), QStringLiteral("AAAA"));
        QCOMPARE(withModule.value(QLatin1String("cubin_arch")).toString(), QStringLiteral("sm_90"));
        QCOMPARE(withModule.value(QLatin1String("cubin_source_hash")).toString(), QStringLiteral("c0ffee"));
        QCOMPARE(withModule.value(QLatin1String("compile_log")).toString(), QStringLiteral("ptxas info"));
        QCOMPARE(withModule.size(), withAll.size() + 4);
    }
};

QTEST_GUILESS_MAIN(TestProtocolCodec)
#include "tst_protocolcodec.moc"

// LlmClient against the scripted server (scriptedllmserver.cpp) on 127.0.0.1: what the client
// sends, how it reads plain and streamed answers, how it spreads n candidates, and every fault
// the server can script. Delays are tens or hundreds of milliseconds so the suite stays fast;
// timing assertions are one-sided and loose.

#include "core/model/llmclient.h"
#include "scriptedllmserver.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QNetworkProxy>
#include <QSet>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTest>

using namespace kwb;
using kwb::test::ScriptedLlmServer;

namespace {

constexpr int kWaitMs = 10000; // generous: CI machines are slow and shared

const QList<ChatMessage> kMessages = {{QStringLiteral("system"), QStringLiteral("You write CUDA kernels.")},
                                      {QStringLiteral("user"), QStringLiteral("Write a fused ReLU.")}};

LlmSettings testSettings(const ScriptedLlmServer& server)
{
    LlmSettings settings;
    settings.baseUrl = server.baseUrl();
    settings.model = QStringLiteral("test-model");
    settings.timeoutMs = 3000;
    settings.maxRetries = 2;
    settings.retryBaseDelayMs = 20;
    settings.retryMaxDelayMs = 200;
    settings.concurrency = 4;
    return settings;
}

// The signals of one client, and a wait for its request to end.
struct Spies
{
    explicit Spies(LlmClient& client)
        : finished(&client, &LlmClient::completionFinished)
        , failed(&client, &LlmClient::completionFailed)
        , text(&client, &LlmClient::textAvailable)
        , retries(&client, &LlmClient::retryScheduled)
    {}
    bool waitForEnd(int ms = kWaitMs)
    {
        return QTest::qWaitFor([this] { return finished.count() + failed.count() > 0; }, ms);
    }
    QVector<Completion> completions() const
    {
        return finished.isEmpty() ? QVector<Completion>() : finished.at(0).at(1).value<QVector<Completion>>();
    }
    QString kind() const { return failed.isEmpty() ? QString() : failed.at(0).at(1).toString(); }
    QString message() const { return failed.isEmpty() ? QString() : failed.at(0).at(2).toString(); }
    // The streamed text of one candidate, pieces joined.
    QString streamed(int index) const
    {
        QString joined;
        for (const QList<QVariant>& arguments : text)
            if (arguments.at(1).toInt() == index)
                joined += arguments.at(2).toString();
        return joined;
    }

    QSignalSpy finished;
    QSignalSpy failed;
    QSignalSpy text;
    QSignalSpy retries;
};

ScriptedLlmServer::Reply fault(ScriptedLlmServer::Action action)
{
    ScriptedLlmServer::Reply reply;
    reply.action = action;
    return reply;
}

// One request of kMessages to a server answering `reply`: the first candidate's stored text and
// what was streamed of it; false (and why) where the request failed.
bool answerOnce(const ScriptedLlmServer::Reply& reply, bool stream, QString* text, QString* streamed, QString* why)
{
    ScriptedLlmServer server;
    if (!server.start()) {
        *why = QStringLiteral("the scripted server did not start");
        return false;
    }
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = stream;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    if (!spies.waitForEnd() || !spies.failed.isEmpty()) {
        *why = spies.message();
        return false;
    }
    *text = spies.completions().at(0).text;
    *streamed = spies.streamed(0);
    return true;
}

} // namespace

class TestLlmClient : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void plainCompletion();
    void unsetOptionsAreLeftOut();
    void baseUrlWithoutPathGetsV1();
    void serverN();
    void parallelNUnderConcurrencyLimit();
    void parallelNWithoutSeed();
    void streaming_data();
    void streaming();
    void streamingServerN();
    void reasoningSentApart_data();
    void reasoningSentApart();
    void contentAsParts();
    void streamingWithoutUsage();
    void retriedFaults_data();
    void retriedFaults();
    void http500Exhausted();
    void retryAfterHonoured();
    void retryAfterBeyondLimitFails();
    void noRetryOn4xx_data();
    void noRetryOn4xx();
    void connectionRefused();
    void slowAnswerTimesOut();
    void tricklingServerEndsAtTheDeadline_data();
    void tricklingServerEndsAtTheDeadline();
    void silentServerRetriesWithinTheDeadline();
    void deadlineDefault();
    void oversizeAnswerIsRefused_data();
    void oversizeAnswerIsRefused();
    void answerAtTheLimitIsKept();
    void invalidJson();
    void emptyChoices();
    void truncatedStream();
    void droppedMidStream();
    void streamErrorEvent();
    void cancelRunning();
    void cancelQueued();
    void badSettingsFailLater();
    void listModels();
    void listModelsFailures();
    void errorMessageFromBody_data();
    void errorMessageFromBody();
};

void TestLlmClient::initTestCase()
{
    qRegisterMetaType<QVector<Completion>>();
    // The traffic is to 127.0.0.1 only; a proxy from the environment must not get in the way.
    QNetworkProxy::setApplicationProxy(QNetworkProxy::NoProxy);
}

void TestLlmClient::plainCompletion()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.apiKey = QStringLiteral("secret-key");
    settings.temperature = 0.7;
    settings.topP = 0.9;
    settings.maxTokens = 256;
    settings.seed = 7;
    settings.stop = {QStringLiteral("</answer>"), QStringLiteral("\n\n\n")};
    client.setSettings(settings);
    Spies spies(client);

    const qint64 id = client.complete(kMessages);
    QCOMPARE(id, 1);
    QCOMPARE(spies.finished.count() + spies.failed.count(), 0); // never from inside complete()
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    QCOMPARE(spies.finished.at(0).at(0).toLongLong(), id);

    QCOMPARE(server.requests().size(), 1);
    const QJsonObject body = server.requests().at(0);
    QCOMPARE(body.value(QStringLiteral("model")).toString(), QStringLiteral("test-model"));
    QCOMPARE(body.value(QStringLiteral("temperature")).toDouble(), 0.7);
    QCOMPARE(body.value(QStringLiteral("top_p")).toDouble(), 0.9);
    QCOMPARE(body.value(QStringLiteral("max_tokens")).toInt(), 256);
    QCOMPARE(body.value(QStringLiteral("seed")).toInt(), 7);
    QCOMPARE(body.value(QStringLiteral("stop")).toArray(),
             QJsonArray({QStringLiteral("</answer>"), QStringLiteral("\n\n\n")}));
    QCOMPARE(body.value(QStringLiteral("stream")).toBool(true), false);
    QVERIFY(!body.contains(QStringLiteral("n")));
    QVERIFY(!body.contains(QStringLiteral("stream_options")));
    const QJsonArray messages = body.value(QStringLiteral("messages")).toArray();
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages.at(0).toObject().value(QStringLiteral("role")).toString(), QStringLiteral("system"));
    QCOMPARE(messages.at(1).toObject().value(QStringLiteral("content")).toString(),
             QStringLiteral("Write a fused ReLU."));
    QCOMPARE(server.headers().at(0).value("authorization"), QByteArray("Bearer secret-key"));
    QCOMPARE(server.paths(), QStringList{QStringLiteral("/v1/chat/completions")});

    const QVector<Completion> completions = spies.completions();
    QCOMPARE(completions.size(), 1);
    const Completion& c = completions.at(0);
    QCOMPARE(c.index, 0);
    QCOMPARE(c.text, QStringLiteral("Hello from the scripted server."));
    QCOMPARE(c.finishReason, QStringLiteral("stop"));
    QCOMPARE(c.promptTokens, 12);
    QCOMPARE(c.completionTokens, 7);
    QVERIFY(!c.usageShared);
    QVERIFY(c.firstByteMs >= 0);
    QVERIFY(c.totalMs >= c.firstByteMs);
    QCOMPARE(c.attempts, 1);
    QCOMPARE(c.seed, std::optional<qint64>(7));
    QCOMPARE(client.pendingCount(), 0);
    QCOMPARE(client.activeCalls(), 0);
    QVERIFY(spies.text.isEmpty()); // no streaming asked
}

void TestLlmClient::unsetOptionsAreLeftOut()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    LlmClient client;
    LlmSettings settings;
    settings.baseUrl = server.baseUrl();
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    const QJsonObject body = server.requests().at(0);
    for (const char* key : {"model", "temperature", "top_p", "max_tokens", "seed", "stop", "n"})
        QVERIFY2(!body.contains(QLatin1String(key)), key);
    QVERIFY(!server.headers().at(0).contains("authorization"));
}

void TestLlmClient::baseUrlWithoutPathGetsV1()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.baseUrl = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(server.port()));
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    QCOMPARE(server.paths(), QStringList{QStringLiteral("/v1/chat/completions")});
}

void TestLlmClient::serverN()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply;
    reply.texts = {QStringLiteral("alpha"), QStringLiteral("beta"), QStringLiteral("gamma")};
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.n = 3;
    settings.serverSupportsN = true;
    settings.seed = 5;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));

    QCOMPARE(server.requests().size(), 1);
    QCOMPARE(server.requests().at(0).value(QStringLiteral("n")).toInt(), 3);
    QCOMPARE(server.requests().at(0).value(QStringLiteral("seed")).toInt(), 5);
    const QVector<Completion> completions = spies.completions();
    QCOMPARE(completions.size(), 3);
    const QStringList expected = reply.texts;
    for (int i = 0; i < 3; ++i) {
        QCOMPARE(completions.at(i).index, i);
        QCOMPARE(completions.at(i).text, expected.at(i));
        QVERIFY(completions.at(i).usageShared);
        QCOMPARE(completions.at(i).completionTokens, 21); // the call's total, shared by its choices
    }
}

void TestLlmClient::parallelNUnderConcurrencyLimit()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply;
    reply.texts = {QStringLiteral("candidate with seed {seed}")};
    reply.delayMs = 100; // long enough for calls to overlap when the client lets them
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.n = 5;
    settings.seed = 42;
    settings.concurrency = 2;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));

    QCOMPARE(server.requests().size(), 5);
    QSet<int> seeds;
    for (const QJsonObject& body : server.requests()) {
        QVERIFY(!body.contains(QStringLiteral("n")));
        seeds.insert(body.value(QStringLiteral("seed")).toInt());
    }
    QCOMPARE(seeds, (QSet<int>{42, 43, 44, 45, 46}));
    QCOMPARE(server.maxConcurrent(), 2);
    const QVector<Completion> completions = spies.completions();
    QCOMPARE(completions.size(), 5);
    for (int i = 0; i < 5; ++i) {
        QCOMPARE(completions.at(i).index, i);
        QCOMPARE(completions.at(i).seed, std::optional<qint64>(42 + i));
        QCOMPARE(completions.at(i).text, QStringLiteral("candidate with seed %1").arg(42 + i));
        QVERIFY(!completions.at(i).usageShared);
        QCOMPARE(completions.at(i).completionTokens, 7);
    }
}

void TestLlmClient::parallelNWithoutSeed()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.n = 3;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 3);
    for (const QJsonObject& body : server.requests())
        QVERIFY(!body.contains(QStringLiteral("seed")));
    QCOMPARE(spies.completions().size(), 3);
    QVERIFY(!spies.completions().at(2).seed);
}

void TestLlmClient::streaming_data()
{
    QTest::addColumn<bool>("crlf");
    QTest::addColumn<bool>("multiLine");
    QTest::addColumn<bool>("splitWrites");
    QTest::addColumn<bool>("comments");
    QTest::newRow("lf") << false << false << false << false;
    QTest::newRow("crlf") << true << false << false << false;
    QTest::newRow("multi-line data") << false << true << false << false;
    QTest::newRow("lines split across reads") << false << false << true << false;
    QTest::newRow("keep-alive comments") << false << false << false << true;
    QTest::newRow("all at once") << true << true << true << true;
}

void TestLlmClient::streaming()
{
    QFETCH(bool, crlf);
    QFETCH(bool, multiLine);
    QFETCH(bool, splitWrites);
    QFETCH(bool, comments);
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply;
    // Non-ASCII text: a split write may cut a UTF-8 sequence in two.
    reply.texts = {QStringLiteral("__global__ void relu(float* x) { /* ünïcødé → ok */ }")};
    reply.chunkChars = 5;
    reply.chunkDelayMs = 2;
    reply.crlf = crlf;
    reply.multiLineData = multiLine;
    reply.splitWrites = splitWrites;
    reply.comments = comments;
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = true;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));

    const QJsonObject body = server.requests().at(0);
    QCOMPARE(body.value(QStringLiteral("stream")).toBool(), true);
    QCOMPARE(body.value(QStringLiteral("stream_options")).toObject().value(QStringLiteral("include_usage")).toBool(),
             true);
    QVERIFY(spies.text.count() > 5);
    QCOMPARE(spies.streamed(0), reply.texts.at(0));
    const QVector<Completion> completions = spies.completions();
    QCOMPARE(completions.size(), 1);
    QCOMPARE(completions.at(0).text, reply.texts.at(0));
    QCOMPARE(completions.at(0).finishReason, QStringLiteral("stop"));
    QCOMPARE(completions.at(0).promptTokens, 12);
    QCOMPARE(completions.at(0).completionTokens, 7);
    QVERIFY(completions.at(0).firstByteMs >= 0);
    QVERIFY(completions.at(0).totalMs >= completions.at(0).firstByteMs);
}

void TestLlmClient::reasoningSentApart_data()
{
    QTest::addColumn<bool>("stream");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("content");
    QTest::addColumn<QString>("stored");
    const QString answer = QStringLiteral("```python\nclass ModelNew: pass\n```");
    const QString thought = QStringLiteral("Draft:\n```python\nclass ModelNew: draft\n```\nbetter");
    const QString whole = QStringLiteral("<think>\n") + thought + QStringLiteral("\n</think>\n\n") + answer;
    for (bool stream : {false, true})
        for (const char* field : {"reasoning_content", "reasoning"}) {
            const QString tag = QStringLiteral("%1, %2").arg(stream ? "streamed" : "json", field);
            QTest::newRow(qPrintable(tag)) << stream << QString::fromLatin1(field) << answer << whole;
            // Cut off while thinking: no content, so the section stays open (modeltext.h: reasoning only).
            QTest::newRow(qPrintable(tag + QStringLiteral(", no content")))
                << stream << QString::fromLatin1(field) << QString() << QStringLiteral("<think>\n") + thought;
        }
}

// A server with a reasoning parser sends the thinking apart from the content: it is kept, as a
// leading <think> section of the one stored text, and the worker's parsers find the answer after it.
void TestLlmClient::reasoningSentApart()
{
    QFETCH(bool, stream);
    QFETCH(QString, field);
    QFETCH(QString, content);
    QFETCH(QString, stored);
    ScriptedLlmServer::Reply reply;
    reply.texts = {content};
    reply.verbatim = true;
    reply.reasoning = {QStringLiteral("Draft:\n```python\nclass ModelNew: draft\n```\nbetter")};
    reply.reasoningField = field;
    reply.finishReason = content.isEmpty() ? QStringLiteral("length") : QStringLiteral("stop");
    QString text, streamed, why;
    QVERIFY2(answerOnce(reply, stream, &text, &streamed, &why), qPrintable(why));
    QCOMPARE(text, stored);
    if (stream)
        QCOMPARE(streamed, stored); // what the live view is shown adds up to what is stored
}

void TestLlmClient::contentAsParts()
{
    ScriptedLlmServer::Reply reply;
    reply.texts = {QStringLiteral("```cuda\n__global__ void k() {}\n```")};
    reply.verbatim = true;
    reply.contentParts = true;
    QString text, streamed, why;
    QVERIFY2(answerOnce(reply, false, &text, &streamed, &why), qPrintable(why));
    QCOMPARE(text, reply.texts.at(0));
}

void TestLlmClient::streamingServerN()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply;
    reply.texts = {QStringLiteral("first candidate text"), QStringLiteral("second, a longer candidate text")};
    reply.chunkChars = 3;
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = true;
    settings.n = 2;
    settings.serverSupportsN = true;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 1);
    for (int i = 0; i < 2; ++i) {
        QCOMPARE(spies.streamed(i), reply.texts.at(i));
        QCOMPARE(spies.completions().at(i).text, reply.texts.at(i));
    }
}

void TestLlmClient::streamingWithoutUsage()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = true;
    settings.streamUsage = false;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    QVERIFY(!server.requests().at(0).contains(QStringLiteral("stream_options")));
    QCOMPARE(spies.completions().at(0).completionTokens, -1);
    QCOMPARE(spies.completions().at(0).text, QStringLiteral("Hello from the scripted server."));
}

void TestLlmClient::retriedFaults_data()
{
    QTest::addColumn<int>("action");
    QTest::addColumn<int>("status");
    QTest::addColumn<int>("delayMs");
    QTest::addColumn<bool>("stream");
    using A = ScriptedLlmServer::Action;
    QTest::newRow("HTTP 500") << int(A::HttpError) << 500 << 0 << false;
    QTest::newRow("HTTP 503") << int(A::HttpError) << 503 << 0 << false;
    QTest::newRow("connection dropped mid-response") << int(A::Drop) << 0 << 0 << false;
    QTest::newRow("slow answer (timeout)") << int(A::Answer) << 0 << 5000 << false;
    QTest::newRow("HTTP 500 before a stream") << int(A::HttpError) << 500 << 0 << true;
    QTest::newRow("slow stream (timeout before any text)") << int(A::Answer) << 0 << 5000 << true;
}

void TestLlmClient::retriedFaults()
{
    QFETCH(int, action);
    QFETCH(int, status);
    QFETCH(int, delayMs);
    QFETCH(bool, stream);
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply first = fault(ScriptedLlmServer::Action(action));
    first.status = status;
    first.delayMs = delayMs;
    server.enqueue(first); // then the default answer
    LlmClient client;
    LlmSettings settings = testSettings(server);
    // The second attempt's answer must arrive within this idle limit: 1 s, not 300 ms, so that a
    // test process starved of CPU (ctest -j2 beside a compile) does not time it out too; the slow
    // rows' first answer comes 5 s late, well past it.
    settings.timeoutMs = 1000;
    settings.stream = stream;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 2);
    QCOMPARE(spies.retries.count(), 1);
    QCOMPARE(spies.retries.at(0).at(1).toInt(), 2); // the attempt to come
    QCOMPARE(spies.completions().at(0).attempts, 2);
    QCOMPARE(spies.completions().at(0).text, QStringLiteral("Hello from the scripted server."));
    if (stream)
        QCOMPARE(spies.streamed(0), QStringLiteral("Hello from the scripted server."));
}

void TestLlmClient::http500Exhausted()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    server.setDefaultReply(fault(ScriptedLlmServer::Action::HttpError));
    LlmClient client;
    client.setSettings(testSettings(server)); // two retries
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY(spies.finished.isEmpty());
    QCOMPARE(spies.kind(), LlmFailure::Http);
    QVERIFY2(spies.message().contains(QLatin1String("HTTP 500")), qPrintable(spies.message()));
    QVERIFY2(spies.message().contains(QLatin1String("scripted failure 500")), qPrintable(spies.message()));
    QVERIFY2(spies.message().contains(QLatin1String("after 3 attempts")), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 3);
    QCOMPARE(spies.retries.count(), 2);
}

void TestLlmClient::retryAfterHonoured()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply limited = fault(ScriptedLlmServer::Action::HttpError);
    limited.status = 429;
    limited.retryAfter = 1;
    server.enqueue(limited);
    LlmClient client;
    client.setSettings(testSettings(server)); // backoff alone would wait 20-30 ms
    Spies spies(client);
    QElapsedTimer clock;
    clock.start();
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    const qint64 elapsed = clock.elapsed();
    QVERIFY2(spies.failed.isEmpty(), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 2);
    QVERIFY2(elapsed >= 900, qPrintable(QString::number(elapsed)));
    QVERIFY(spies.retries.at(0).at(2).toInt() >= 1000);
    QVERIFY(spies.retries.at(0).at(3).toString().contains(QLatin1String("429")));
}

void TestLlmClient::retryAfterBeyondLimitFails()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply limited = fault(ScriptedLlmServer::Action::HttpError);
    limited.status = 429;
    limited.retryAfter = 60;
    server.setDefaultReply(limited);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.maxRetryAfterMs = 5000;
    client.setSettings(settings);
    Spies spies(client);
    QElapsedTimer clock;
    clock.start();
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QVERIFY(clock.elapsed() < 5000);
    QCOMPARE(spies.kind(), LlmFailure::Http);
    QVERIFY2(spies.message().contains(QLatin1String("retry after 60 s")), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 1);
}

void TestLlmClient::noRetryOn4xx_data()
{
    QTest::addColumn<int>("status");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("serverMessage");
    QTest::newRow("400, OpenAI shape")
        << 400 << QByteArray(R"({"error":{"message":"'messages' must be a list","type":"invalid_request_error"}})")
        << QStringLiteral("'messages' must be a list");
    QTest::newRow("404, vLLM shape")
        << 404 << QByteArray(R"({"object":"error","message":"The model `nope` does not exist.","code":404})")
        << QStringLiteral("The model `nope` does not exist.");
    QTest::newRow("401, Ollama shape") << 401 << QByteArray(R"({"error":"unauthorized"})")
                                       << QStringLiteral("unauthorized");
}

void TestLlmClient::noRetryOn4xx()
{
    QFETCH(int, status);
    QFETCH(QByteArray, body);
    QFETCH(QString, serverMessage);
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply = fault(ScriptedLlmServer::Action::HttpError);
    reply.status = status;
    reply.body = body;
    server.setDefaultReply(reply);
    LlmClient client;
    client.setSettings(testSettings(server));
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.kind(), LlmFailure::Http);
    QVERIFY2(spies.message().contains(QStringLiteral("HTTP %1").arg(status)), qPrintable(spies.message()));
    QVERIFY2(spies.message().contains(serverMessage), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 1);
    QCOMPARE(spies.retries.count(), 0);
}

void TestLlmClient::connectionRefused()
{
    quint16 port = 0;
    {
        QTcpServer probe; // a port that was free a moment ago and has no listener now
        QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
        port = probe.serverPort();
    }
    LlmClient client;
    LlmSettings settings;
    settings.baseUrl = QUrl(QStringLiteral("http://127.0.0.1:%1/v1").arg(port));
    settings.maxRetries = 2;
    settings.retryBaseDelayMs = 20;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.kind(), LlmFailure::Connection);
    QVERIFY2(spies.message().contains(QLatin1String("refused"), Qt::CaseInsensitive), qPrintable(spies.message()));
    QVERIFY2(spies.message().contains(QLatin1String("after 3 attempts")), qPrintable(spies.message()));
    QCOMPARE(spies.retries.count(), 2);
    // Backoff doubles: the second wait is at least twice the base.
    QVERIFY(spies.retries.at(0).at(2).toInt() >= 20);
    QVERIFY(spies.retries.at(1).at(2).toInt() >= 40);
}

void TestLlmClient::slowAnswerTimesOut()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply slow;
    slow.delayMs = 3000;
    server.setDefaultReply(slow);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.timeoutMs = 300;
    settings.maxRetries = 0;
    client.setSettings(settings);
    Spies spies(client);
    QElapsedTimer clock;
    clock.start();
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    const qint64 elapsed = clock.elapsed();
    QCOMPARE(spies.kind(), LlmFailure::Timeout);
    QVERIFY2(spies.message().contains(QLatin1String("no response")), qPrintable(spies.message()));
    QVERIFY2(elapsed >= 250 && elapsed < 2500, qPrintable(QString::number(elapsed)));
}

void TestLlmClient::tricklingServerEndsAtTheDeadline_data()
{
    QTest::addColumn<bool>("stream");
    QTest::newRow("plain") << false;
    QTest::newRow("stream") << true;
}

void TestLlmClient::tricklingServerEndsAtTheDeadline()
{
    // One byte every 50 ms keeps any idle timer from firing; only the total deadline ends it.
    QFETCH(bool, stream);
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply trickle = fault(ScriptedLlmServer::Action::Trickle);
    trickle.trickleMs = 50;
    server.setDefaultReply(trickle);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = stream;
    settings.timeoutMs = 1000;
    settings.deadlineMs = 2000;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    // The bound is 10x the deadline: the point is that it ends, not how precisely.
    QVERIFY(spies.waitForEnd(20000));
    QCOMPARE(spies.kind(), LlmFailure::Timeout);
    QVERIFY2(spies.message().contains(QLatin1String("model time-out of 2 s")), qPrintable(spies.message()));
    QVERIFY2(spies.message().contains(QLatin1String("still sending")), qPrintable(spies.message()));
    QCOMPARE(spies.finished.count(), 0);
    QCOMPARE(spies.failed.count(), 1);
}

void TestLlmClient::silentServerRetriesWithinTheDeadline()
{
    // A server that accepts and never answers: each attempt's idle limit (300 ms) passes, it is
    // retried, and the deadline (1.5 s) ends the whole request however many retries are allowed.
    ScriptedLlmServer server;
    QVERIFY(server.start());
    server.setDefaultReply(fault(ScriptedLlmServer::Action::Silent));
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.timeoutMs = 300;
    settings.deadlineMs = 1500;
    settings.maxRetries = 1000;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd(15000));
    QCOMPARE(spies.kind(), LlmFailure::Timeout);
    QVERIFY2(spies.message().contains(QLatin1String("1.5 s")), qPrintable(spies.message()));
    QVERIFY(spies.retries.count() >= 1); // retried inside the deadline
    QVERIFY(server.requests().size() >= 2);
    QVERIFY(server.requests().size() < 1000);
    // Nothing is left running.
    QTest::qWait(400);
    QCOMPARE(spies.failed.count(), 1);
    QCOMPARE(client.pendingCount(), 0);
}

void TestLlmClient::deadlineDefault()
{
    const LlmSettings settings;
    QCOMPARE(settings.deadlineMs, kDefaultModelDeadlineMs);
    QCOMPARE(settings.maxAnswerBytes, kMaxAnswerBytes);
    QCOMPARE(kMaxAnswerBytes, qsizetype(1) << 20); // the candidate format's limit (docs/candidate-format.md)
}

void TestLlmClient::oversizeAnswerIsRefused_data()
{
    QTest::addColumn<bool>("stream");
    QTest::addColumn<int>("mebibytes");
    // 3 MiB of text fits the body bound and is refused once read; 24 MiB is refused mid-body.
    QTest::newRow("plain, read whole") << false << 3;
    QTest::newRow("plain, stopped mid-body") << false << 48;
    QTest::newRow("stream") << true << 48;
}

void TestLlmClient::oversizeAnswerIsRefused()
{
    QFETCH(bool, stream);
    QFETCH(int, mebibytes);
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply big;
    big.texts = {QStringLiteral("BIGANSWER ") + QString(mebibytes << 20, QLatin1Char('x'))};
    big.chunkChars = 64 << 10;
    server.setDefaultReply(big);
    LlmClient client;
    LlmSettings settings = testSettings(server); // the default limit: 1 MiB
    settings.stream = stream;
    settings.timeoutMs = 20000;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd(30000));
    QCOMPARE(spies.kind(), LlmFailure::TooLarge);
    QCOMPARE(server.requests().size(), 1); // not retried
    const QString message = spies.message();
    QVERIFY2(message.contains(QLatin1String("over the limit of 1048576 bytes")), qPrintable(message.left(500)));
    // A short head, never the answer: the message stays small whatever the answer's size.
    QVERIFY2(message.size() < 1000, qPrintable(QString::number(message.size())));
    if (!stream)
        QVERIFY2(message.contains(QLatin1String("BIGANSWER")) || message.contains(QLatin1String("choices")),
                 qPrintable(message));
    else
        QVERIFY2(message.contains(QLatin1String("BIGANSWER")), qPrintable(message));
    // The client stopped reading: the server could not hand over the rest (at most what the
    // client read before refusing, about the bound, plus the loopback's and Qt's buffers: 22.6 MB
    // of a 24 MiB answer on a loaded 2-core machine, so the answer is twice that and the bound
    // leaves those buffers 16 MiB).
    if (mebibytes > 8)
        QVERIFY2(server.bytesWritten() < qint64(mebibytes - 16) << 20,
                 qPrintable(QString::number(server.bytesWritten())));
    // Streamed text shown before the limit is at most the limit.
    qsizetype shown = 0;
    for (const QList<QVariant>& arguments : spies.text)
        shown += arguments.at(2).toString().toUtf8().size();
    QVERIFY(shown <= kMaxAnswerBytes);
}

void TestLlmClient::answerAtTheLimitIsKept()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply full;
    full.texts = {QString(int(kMaxAnswerBytes), QLatin1Char('y'))};
    server.setDefaultReply(full);
    LlmClient client;
    client.setSettings(testSettings(server));
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.failed.count(), 0);
    QCOMPARE(spies.completions().value(0).text.size(), qsizetype(kMaxAnswerBytes));
}

void TestLlmClient::invalidJson()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    server.setDefaultReply(fault(ScriptedLlmServer::Action::InvalidJson));
    LlmClient client;
    client.setSettings(testSettings(server));
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.kind(), LlmFailure::InvalidResponse);
    QVERIFY2(spies.message().contains(QLatin1String("invalid JSON")), qPrintable(spies.message()));
    QVERIFY2(spies.message().contains(QLatin1String("\"choices\"")), qPrintable(spies.message())); // the body's start
    QCOMPARE(server.requests().size(), 1);
}

void TestLlmClient::emptyChoices()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    server.setDefaultReply(fault(ScriptedLlmServer::Action::EmptyChoices));
    LlmClient client;
    client.setSettings(testSettings(server));
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.kind(), LlmFailure::InvalidResponse);
    QVERIFY2(spies.message().contains(QLatin1String("no choices")), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 1);
}

void TestLlmClient::truncatedStream()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply = fault(ScriptedLlmServer::Action::Truncate);
    reply.texts = {QStringLiteral("a kernel that was cut short")};
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = true;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.kind(), LlmFailure::Truncated);
    QVERIFY2(spies.message().contains(QLatin1String("[DONE]")), qPrintable(spies.message()));
    QVERIFY2(spies.message().contains(QLatin1String("a kernel that was cut short")), qPrintable(spies.message()));
    QCOMPARE(spies.streamed(0), QStringLiteral("a kernel that was cut short"));
    QCOMPARE(server.requests().size(), 1);
}

void TestLlmClient::droppedMidStream()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply = fault(ScriptedLlmServer::Action::Drop);
    reply.texts = {QStringLiteral("0123456789abcdefghij")};
    reply.chunkChars = 2;
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = true;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    // Text was shown: a retry would show it twice, so the call fails and keeps what came.
    QCOMPARE(spies.kind(), LlmFailure::Truncated);
    const QString partial = spies.streamed(0);
    QVERIFY(!partial.isEmpty());
    QVERIFY(partial.size() < 20);
    QVERIFY2(spies.message().contains(QStringLiteral("partial text:\n") + partial), qPrintable(spies.message()));
    QCOMPARE(server.requests().size(), 1);
    QCOMPARE(spies.retries.count(), 0);
}

void TestLlmClient::streamErrorEvent()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    server.setDefaultReply(fault(ScriptedLlmServer::Action::StreamError));
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.stream = true;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.kind(), LlmFailure::ServerError);
    QVERIFY2(spies.message().contains(QLatin1String("the model crashed mid-stream")), qPrintable(spies.message()));
}

void TestLlmClient::cancelRunning()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply slow;
    slow.delayMs = 3000;
    server.setDefaultReply(slow);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.n = 2;
    client.setSettings(settings);
    Spies spies(client);
    const qint64 id = client.complete(kMessages);
    QTRY_COMPARE_WITH_TIMEOUT(server.activeCount(), 2, kWaitMs);
    QElapsedTimer clock;
    clock.start();
    QVERIFY(client.cancel(id));
    QCOMPARE(client.pendingCount(), 0);
    QCOMPARE(client.activeCalls(), 0);
    QVERIFY(spies.failed.isEmpty()); // not from inside cancel()
    QVERIFY(!client.cancel(id));
    QVERIFY(spies.waitForEnd());
    QVERIFY(clock.elapsed() < 1000);
    QCOMPARE(spies.failed.at(0).at(0).toLongLong(), id);
    QCOMPARE(spies.kind(), LlmFailure::Cancelled);
    QTRY_COMPARE_WITH_TIMEOUT(server.activeCount(), 0, kWaitMs); // the connections were closed
    QTest::qWait(50);
    QCOMPARE(spies.failed.count(), 1);
    QVERIFY(spies.finished.isEmpty());
}

void TestLlmClient::cancelQueued()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    ScriptedLlmServer::Reply reply;
    reply.delayMs = 200;
    server.setDefaultReply(reply);
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.concurrency = 1;
    client.setSettings(settings);
    Spies spies(client);
    const qint64 first = client.complete(kMessages);
    const qint64 second = client.complete(kMessages);
    QCOMPARE(client.activeCalls(), 1);
    QVERIFY(client.cancel(second));
    QTRY_VERIFY_WITH_TIMEOUT(spies.finished.count() == 1 && spies.failed.count() == 1, kWaitMs);
    QCOMPARE(spies.finished.at(0).at(0).toLongLong(), first);
    QCOMPARE(spies.failed.at(0).at(0).toLongLong(), second);
    QCOMPARE(server.requests().size(), 1);
}

void TestLlmClient::badSettingsFailLater()
{
    LlmClient client;
    LlmSettings settings;
    settings.n = 0;
    client.setSettings(settings);
    Spies spies(client);
    client.complete(kMessages);
    QVERIFY(spies.failed.isEmpty());
    QVERIFY(spies.waitForEnd());
    QCOMPARE(spies.kind(), LlmFailure::BadRequest);
    settings.n = 1;
    settings.baseUrl = QUrl(QStringLiteral("ftp://127.0.0.1/v1"));
    client.setSettings(settings);
    client.complete(kMessages);
    QTRY_COMPARE_WITH_TIMEOUT(spies.failed.count(), 2, kWaitMs);
    QCOMPARE(spies.failed.at(1).at(1).toString(), LlmFailure::BadRequest);
    QVERIFY(spies.failed.at(1).at(2).toString().contains(QLatin1String("ftp://")));
}

void TestLlmClient::listModels()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    LlmClient client;
    LlmSettings settings = testSettings(server);
    settings.apiKey = QStringLiteral("k");
    client.setSettings(settings);
    QSignalSpy available(&client, &LlmClient::modelsAvailable);
    QSignalSpy failed(&client, &LlmClient::modelsFailed);
    client.listModels();
    QTRY_COMPARE_WITH_TIMEOUT(available.count() + failed.count(), 1, kWaitMs);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    QCOMPARE(available.at(0).at(0).toStringList(), (QStringList{QStringLiteral("model-a"), QStringLiteral("model-b")}));
    QCOMPARE(server.paths(), QStringList{QStringLiteral("/v1/models")});
    QCOMPARE(server.headers().at(0).value("authorization"), QByteArray("Bearer k"));
}

void TestLlmClient::listModelsFailures()
{
    ScriptedLlmServer server;
    QVERIFY(server.start());
    server.setModelsError(500);
    LlmClient client;
    client.setSettings(testSettings(server));
    QSignalSpy available(&client, &LlmClient::modelsAvailable);
    QSignalSpy failed(&client, &LlmClient::modelsFailed);
    client.listModels();
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kWaitMs);
    QVERIFY2(failed.at(0).at(0).toString().contains(QLatin1String("models are not available here")),
             qPrintable(failed.at(0).at(0).toString()));

    quint16 port = 0;
    {
        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
        port = probe.serverPort();
    }
    LlmSettings settings = testSettings(server);
    settings.baseUrl = QUrl(QStringLiteral("http://127.0.0.1:%1/v1").arg(port));
    client.setSettings(settings);
    client.listModels();
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 2, kWaitMs);
    QVERIFY2(failed.at(1).at(0).toString().contains(QLatin1String("refused"), Qt::CaseInsensitive),
             qPrintable(failed.at(1).at(0).toString()));
    QVERIFY(available.isEmpty());
}

void TestLlmClient::errorMessageFromBody_data()
{
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("expected");
    QTest::newRow("OpenAI / llama.cpp") << QByteArray(
                                               R"({"error":{"code":400,"message":"context too long","type":"x"}})")
                                        << QStringLiteral("context too long");
    QTest::newRow("Ollama") << QByteArray(R"({"error":"model \"x\" not found"})")
                            << QStringLiteral("model \"x\" not found");
    QTest::newRow("vLLM") << QByteArray(R"({"object":"error","message":"bad n","type":"BadRequestError"})")
                          << QStringLiteral("bad n");
    QTest::newRow("FastAPI") << QByteArray(R"({"detail":"Not Found"})") << QStringLiteral("Not Found");
    QTest::newRow("plain text") << QByteArray("upstream   connect error\n") << QStringLiteral("upstream connect error");
    QTest::newRow("empty") << QByteArray() << QStringLiteral("(empty body)");
}

void TestLlmClient::errorMessageFromBody()
{
    QFETCH(QByteArray, body);
    QFETCH(QString, expected);
    QCOMPARE(LlmClient::errorMessageFromBody(body), expected);
}

QTEST_GUILESS_MAIN(TestLlmClient)
#include "tst_llmclient.moc"

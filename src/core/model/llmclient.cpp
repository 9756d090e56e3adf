#include "llmclient.h"

#include "core/model/secrets.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>
#include <QNetworkAccessManager>
#include <QNetworkRequest>
#include <QRandomGenerator>
#include <QTimer>

#include <algorithm>
#include <utility>

namespace kwb {

namespace {

// In JSON one byte of text may take up to six ("\u001f"); the rest of a body is small.
constexpr qsizetype kJsonEscapeFactor = 6;

// A message's content: a string, or (some servers) a list of parts whose text parts are joined.
QString contentText(const QJsonValue& content)
{
    if (!content.isArray())
        return content.toString();
    QString text;
    for (const QJsonValue& part : content.toArray())
        text += part.isString() ? part.toString() : part.toObject().value(QStringLiteral("text")).toString();
    return text;
}

// The thinking a server split off the content (reasoning_content: vLLM's and SGLang's reasoning
// parsers, llama.cpp's server, DeepSeek's API; reasoning: Ollama, OpenRouter).
QString reasoningText(const QJsonObject& message)
{
    const QString text = message.value(QStringLiteral("reasoning_content")).toString();
    return text.isEmpty() ? message.value(QStringLiteral("reasoning")).toString() : text;
}

// One stored text per response: reasoning the server sent apart goes first as a <think> section,
// the form other servers send it in, which core/protocol/modeltext.h reads for every reader. With
// no content after it (the model was cut off while thinking) the section is left open, as such a
// response arrives from a server that does not split it off.
QString withReasoning(const QString& reasoning, const QString& content)
{
    if (reasoning.isEmpty())
        return content;
    if (content.isEmpty())
        return QStringLiteral("<think>\n") + reasoning;
    return QStringLiteral("<think>\n") + reasoning + QStringLiteral("\n</think>\n\n") + content;
}
constexpr qsizetype kEnvelopeBytes = qsizetype(64) << 10;
// What a too_large message keeps of the text: enough to recognise it, never the answer.
constexpr int kTooLargeHeadChars = 200;

QString excerpt(const QByteArray& bytes, int maxChars = 300)
{
    QString text = QString::fromUtf8(bytes.left(maxChars * 4)).simplified();
    if (text.size() > maxChars)
        text = text.left(maxChars) + QStringLiteral("…");
    return text;
}

QString seconds(qint64 ms)
{
    return QString::number(ms / 1000.0, 'g', 4) + QStringLiteral(" s");
}

// Retry-After is delta-seconds or an HTTP date (RFC 9110 §10.2.3); -1 when absent or unreadable.
int parseRetryAfterMs(const QByteArray& value)
{
    const QByteArray trimmed = value.trimmed();
    if (trimmed.isEmpty())
        return -1;
    bool ok = false;
    const double secs = trimmed.toDouble(&ok);
    if (ok)
        return secs < 0 ? -1 : int(std::min(secs * 1000.0, 1e9));
    QString date = QString::fromLatin1(trimmed);
    date.replace(QLatin1String(" GMT"), QLatin1String(" +0000"));
    const QDateTime when = QDateTime::fromString(date, Qt::RFC2822Date);
    if (!when.isValid())
        return -1;
    return int(std::clamp<qint64>(QDateTime::currentDateTimeUtc().msecsTo(when), 0, 1000000000));
}

// Failures of the path to the server that a later attempt may not meet. Host not found, TLS and
// protocol errors are configuration problems: retrying only delays the message.
bool retryableNetworkError(QNetworkReply::NetworkError error)
{
    switch (error) {
    case QNetworkReply::ConnectionRefusedError:
    case QNetworkReply::RemoteHostClosedError:
    case QNetworkReply::TimeoutError:
    case QNetworkReply::TemporaryNetworkFailureError:
    case QNetworkReply::NetworkSessionFailedError:
    case QNetworkReply::UnknownNetworkError:
    case QNetworkReply::ProxyConnectionRefusedError:
    case QNetworkReply::ProxyConnectionClosedError:
    case QNetworkReply::ProxyTimeoutError: return true;
    default: return false;
    }
}

QNetworkRequest makeRequest(const QUrl& url, const LlmSettings& settings, const QByteArray& accept)
{
    QNetworkRequest request(url);
    request.setRawHeader("Accept", accept);
    if (!settings.apiKey.isEmpty())
        request.setRawHeader("Authorization", "Bearer " + settings.apiKey.toUtf8());
    return request;
}

} // namespace

LlmClient::LlmClient(QObject* parent)
    : QObject(parent)
    , m_network(new QNetworkAccessManager(this))
{}

LlmClient::~LlmClient()
{
    for (auto& entry : m_requests) {
        for (auto& call : entry.second->calls)
            dropCall(call.get());
        stopDeadline(entry.second.get());
    }
    m_requests.clear();
}

void LlmClient::setSettings(const LlmSettings& settings)
{
    m_settings = settings;
    secrets::remember(settings.apiKey);
}

QUrl LlmClient::endpoint(const LlmSettings& settings, const QString& path) const
{
    QUrl url = settings.baseUrl;
    QString prefix = url.path();
    while (prefix.endsWith(QLatin1Char('/')))
        prefix.chop(1);
    if (prefix.isEmpty())
        prefix = QStringLiteral("/v1");
    url.setPath(prefix + path);
    return url;
}

QJsonObject LlmClient::requestBody(const QList<ChatMessage>& messages, const LlmSettings& settings, int n,
                                   std::optional<qint64> seed)
{
    QJsonArray list;
    for (const ChatMessage& message : messages)
        list.append(QJsonObject{{QStringLiteral("role"), message.role}, {QStringLiteral("content"), message.content}});
    QJsonObject body;
    if (!settings.model.isEmpty())
        body.insert(QStringLiteral("model"), settings.model);
    body.insert(QStringLiteral("messages"), list);
    if (settings.temperature)
        body.insert(QStringLiteral("temperature"), *settings.temperature);
    if (settings.topP)
        body.insert(QStringLiteral("top_p"), *settings.topP);
    if (settings.maxTokens > 0)
        body.insert(QStringLiteral("max_tokens"), settings.maxTokens);
    if (seed)
        body.insert(QStringLiteral("seed"), *seed);
    if (!settings.stop.isEmpty())
        body.insert(QStringLiteral("stop"), QJsonArray::fromStringList(settings.stop));
    if (n > 1)
        body.insert(QStringLiteral("n"), n);
    body.insert(QStringLiteral("stream"), settings.stream);
    if (settings.stream && settings.streamUsage)
        body.insert(QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}});
    return body;
}

QString LlmClient::errorMessageFromBody(const QByteArray& body)
{
    const QJsonDocument document = QJsonDocument::fromJson(body);
    if (document.isObject()) {
        const QJsonObject object = document.object();
        const QJsonValue error = object.value(QStringLiteral("error"));
        if (error.isObject()) { // OpenAI, llama.cpp, LM Studio
            const QString message = error.toObject().value(QStringLiteral("message")).toString();
            if (!message.isEmpty())
                return message;
        }
        if (error.isString()) // Ollama
            return error.toString();
        const QString message = object.value(QStringLiteral("message")).toString(); // vLLM, SGLang
        if (!message.isEmpty())
            return message;
        const QJsonValue detail = object.value(QStringLiteral("detail")); // FastAPI validation
        if (detail.isString())
            return detail.toString();
        if (detail.isArray())
            return QString::fromUtf8(QJsonDocument(detail.toArray()).toJson(QJsonDocument::Compact)).left(500);
    }
    const QString text = excerpt(body, 500);
    return text.isEmpty() ? QStringLiteral("(empty body)") : text;
}

LlmClient::Request* LlmClient::findRequest(qint64 id)
{
    const auto it = m_requests.find(id);
    return it == m_requests.end() ? nullptr : it->second.get();
}

qint64 LlmClient::complete(const QList<ChatMessage>& messages)
{
    return complete(messages, m_settings);
}

qint64 LlmClient::complete(const QList<ChatMessage>& messages, const LlmSettings& settings)
{
    secrets::remember(settings.apiKey); // never shown to the model, never stored
    const qint64 id = ++m_nextId;
    auto request = std::make_unique<Request>();
    request->id = id;
    request->settings = settings;

    QString problem;
    const QString scheme = settings.baseUrl.scheme();
    if (!settings.baseUrl.isValid() || (scheme != QLatin1String("http") && scheme != QLatin1String("https")))
        problem = QStringLiteral("the base URL \"%1\" is not an http(s) URL").arg(settings.baseUrl.toString());
    else if (settings.n < 1)
        problem = QStringLiteral("n must be at least 1 (it is %1)").arg(settings.n);
    else if (messages.isEmpty())
        problem = QStringLiteral("no messages to send");
    if (!problem.isEmpty()) {
        m_requests.emplace(id, std::move(request));
        failRequest(id, LlmFailure::BadRequest, problem, true);
        return id;
    }

    request->age.start();
    if (settings.deadlineMs > 0) {
        request->deadlineTimer = new QTimer(this);
        request->deadlineTimer->setSingleShot(true);
        connect(request->deadlineTimer, &QTimer::timeout, this, [this, id] { onDeadline(id); });
        request->deadlineTimer->start(settings.deadlineMs);
    }
    const bool oneCall = settings.n == 1 || settings.serverSupportsN;
    const int callCount = oneCall ? 1 : settings.n;
    request->completions.resize(settings.n);
    request->callsLeft = callCount;
    for (int i = 0; i < callCount; ++i) {
        auto call = std::make_unique<Call>();
        call->requestId = id;
        call->firstIndex = oneCall ? 0 : i;
        call->choices = oneCall ? settings.n : 1;
        if (i < settings.sampleSeeds.size())
            call->seed = settings.sampleSeeds.at(i);
        else if (settings.seed)
            call->seed = *settings.seed + i; // distinct seeds, or parallel candidates would be one
        call->body =
            QJsonDocument(requestBody(messages, settings, call->choices, call->seed)).toJson(QJsonDocument::Compact);
        Call* raw = call.get();
        call->idleTimer = new QTimer(this);
        call->idleTimer->setSingleShot(true);
        connect(call->idleTimer, &QTimer::timeout, this, [this, raw] { onIdleTimeout(raw); });
        call->backoffTimer = new QTimer(this);
        call->backoffTimer->setSingleShot(true);
        connect(call->backoffTimer, &QTimer::timeout, this, [this, raw] {
            enqueue(raw, true); // a retry goes before calls that have not started yet
            pump();
        });
        request->calls.push_back(std::move(call));
    }
    Request* added = request.get();
    m_requests.emplace(id, std::move(request));
    for (auto& call : added->calls)
        enqueue(call.get());
    pump(); // QNetworkAccessManager answers asynchronously: no signal comes from inside this call
    return id;
}

bool LlmClient::cancel(qint64 requestId)
{
    if (!findRequest(requestId))
        return false;
    failRequest(requestId, LlmFailure::Cancelled, QStringLiteral("cancelled"), true);
    return true;
}

void LlmClient::cancelAll()
{
    QList<qint64> ids;
    for (const auto& entry : m_requests)
        ids.append(entry.first);
    for (qint64 id : ids)
        cancel(id);
}

void LlmClient::enqueue(Call* call, bool front)
{
    call->queued = true;
    if (front)
        m_queue.prepend(call);
    else
        m_queue.append(call);
}

void LlmClient::pump()
{
    const int limit = std::max(1, m_settings.concurrency);
    while (m_activeCalls < limit && !m_queue.isEmpty()) {
        Call* call = m_queue.takeFirst();
        call->queued = false;
        startAttempt(call);
    }
}

void LlmClient::startAttempt(Call* call)
{
    const Request* request = findRequest(call->requestId);
    Q_ASSERT(request);
    const LlmSettings& settings = request->settings;
    ++call->attempt;
    call->firstByteMs = -1;
    call->httpStatus = 0;
    call->sse = false;
    call->headersSeen = false;
    call->timedOut = false;
    call->raw.clear();
    call->lineBuffer.clear();
    call->eventData.clear();
    call->eventHasData = false;
    call->sawDone = false;
    call->textShown = false;
    call->state.clear();
    call->promptTokens = call->completionTokens = -1;

    QNetworkRequest networkRequest = makeRequest(endpoint(settings, QStringLiteral("/chat/completions")), settings,
                                                 settings.stream ? "text/event-stream" : "application/json");
    networkRequest.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    call->clock.start();
    call->reply = m_network->post(networkRequest, call->body);
    ++m_activeCalls;
    connect(call->reply, &QNetworkReply::metaDataChanged, this, [this, call] {
        noteHeaders(call);
        call->idleTimer->start();
    });
    connect(call->reply, &QNetworkReply::readyRead, this, [this, call] { onReadyRead(call); });
    connect(call->reply, &QNetworkReply::finished, this, [this, call] { onFinished(call); });
    qint64 idle = std::max(1, settings.timeoutMs);
    const qint64 left = remainingMs(request);
    if (left >= 0) // the deadline ends the request anyway; the idle limit must not outlast it
        idle = std::clamp<qint64>(left, 1, idle);
    call->idleTimer->start(int(idle));
}

void LlmClient::noteHeaders(Call* call)
{
    if (call->headersSeen || !call->reply)
        return;
    const QVariant status = call->reply->attribute(QNetworkRequest::HttpStatusCodeAttribute);
    if (!status.isValid())
        return;
    call->headersSeen = true;
    if (call->firstByteMs < 0)
        call->firstByteMs = call->clock.elapsed();
    call->httpStatus = status.toInt();
    const QByteArray type = call->reply->rawHeader("Content-Type").toLower();
    // Error statuses come as JSON; and a server that ignores `stream` answers with plain JSON,
    // which is taken as it is.
    call->sse = call->httpStatus >= 200 && call->httpStatus < 300 && type.contains("text/event-stream");
}

void LlmClient::onReadyRead(Call* call)
{
    noteHeaders(call);
    call->idleTimer->start();
    const QByteArray bytes = call->reply->readAll();
    if (call->sse) {
        feedSse(call, bytes);
        return;
    }
    call->raw += bytes;
    const LlmSettings& settings = findRequest(call->requestId)->settings;
    if (call->raw.size() > rawLimit(settings, call->choices)) {
        // Stop reading: the rest of the body is never held.
        const QString head = QString::fromUtf8(call->raw.left(kTooLargeHeadChars * 4));
        attemptFailed(call, LlmFailure::TooLarge, tooLargeMessage(settings, call->raw.size(), head), false);
    }
}

bool LlmClient::feedSse(Call* call, const QByteArray& bytes)
{
    call->lineBuffer += bytes;
    // Lines end in LF or CRLF; a line may arrive split over several reads.
    qsizetype newline;
    while ((newline = call->lineBuffer.indexOf('\n')) >= 0) {
        QByteArray line = call->lineBuffer.left(newline);
        call->lineBuffer.remove(0, newline + 1);
        if (!endLine(call, std::move(line)))
            return false;
    }
    const LlmSettings& settings = findRequest(call->requestId)->settings;
    const qsizetype pending = std::max(call->lineBuffer.size(), call->eventData.size());
    if (pending > rawLimit(settings, call->choices)) {
        // One event longer than any answer within the limit could need.
        const QByteArray& bytes =
            call->lineBuffer.size() >= call->eventData.size() ? call->lineBuffer : call->eventData;
        attemptFailed(call, LlmFailure::TooLarge,
                      tooLargeMessage(settings, pending, QString::fromUtf8(bytes.left(kTooLargeHeadChars * 4))), false);
        return false;
    }
    return true;
}

bool LlmClient::endLine(Call* call, QByteArray line)
{
    if (line.endsWith('\r'))
        line.chop(1);
    if (line.isEmpty()) // an empty line ends an event
        return call->eventHasData ? dispatchEvent(call) : true;
    if (line.startsWith(':')) // a comment: servers send these to keep the connection alive
        return true;
    const qsizetype colon = line.indexOf(':');
    const QByteArray field = colon < 0 ? line : line.left(colon);
    QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
    if (value.startsWith(' '))
        value.remove(0, 1);
    if (field == "data") {
        if (call->eventHasData)
            call->eventData += '\n'; // one event's data lines join with newlines (the SSE spec)
        call->eventData += value;
        call->eventHasData = true;
    }
    // event:, id: and retry: carry nothing the chat API uses.
    return true;
}

bool LlmClient::dispatchEvent(Call* call)
{
    const QByteArray data = call->eventData;
    call->eventData.clear();
    call->eventHasData = false;
    if (call->sawDone)
        return true;
    if (data.trimmed() == "[DONE]") {
        call->sawDone = true;
        return true;
    }
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(data, &parseError);
    if (!document.isObject()) {
        attemptFailed(call, LlmFailure::InvalidResponse,
                      QStringLiteral("invalid JSON in a stream event (%1): %2")
                              .arg(parseError.error == QJsonParseError::NoError ? QStringLiteral("not an object")
                                                                                : parseError.errorString(),
                                   excerpt(data)) +
                          partialText(call),
                      false);
        return false;
    }
    const QJsonObject object = document.object();
    if (object.contains(QStringLiteral("error"))) {
        attemptFailed(call, LlmFailure::ServerError,
                      QStringLiteral("the server reported an error in the stream: ") + errorMessageFromBody(data) +
                          partialText(call),
                      false);
        return false;
    }
    QList<QPair<int, QString>> pieces;
    QString error, kind;
    if (!absorbChunk(call, object, true, &pieces, &error, &kind)) {
        attemptFailed(call, kind, kind == LlmFailure::TooLarge ? error : error + partialText(call), false);
        return false;
    }
    return emitText(call->requestId, pieces);
}

bool LlmClient::emitText(qint64 requestId, const QList<QPair<int, QString>>& pieces)
{
    for (const auto& piece : pieces) {
        Q_EMIT textAvailable(requestId, piece.first, piece.second);
        if (!findRequest(requestId)) // a slot cancelled it
            return false;
    }
    return true;
}

bool LlmClient::absorbChunk(Call* call, const QJsonObject& object, bool streamed, QList<QPair<int, QString>>* pieces,
                            QString* error, QString* kind)
{
    *kind = LlmFailure::InvalidResponse;
    const LlmSettings& settings = findRequest(call->requestId)->settings;
    const QJsonValue usage = object.value(QStringLiteral("usage"));
    if (usage.isObject()) {
        call->promptTokens = usage.toObject().value(QStringLiteral("prompt_tokens")).toInt(-1);
        call->completionTokens = usage.toObject().value(QStringLiteral("completion_tokens")).toInt(-1);
    }
    const QJsonArray choices = object.value(QStringLiteral("choices")).toArray();
    if (!streamed && choices.isEmpty()) {
        *error = QStringLiteral("the server returned no choices: ") + excerpt(QJsonDocument(object).toJson());
        return false;
    }
    for (qsizetype position = 0; position < choices.size(); ++position) {
        const QJsonObject choice = choices.at(position).toObject();
        const int index = choice.value(QStringLiteral("index")).toInt(int(position));
        if (index < 0 || index >= call->choices) {
            *error = QStringLiteral("the server returned choice %1 of a request for %2").arg(index).arg(call->choices);
            return false;
        }
        ChoiceState& state = call->state[index];
        QString text;
        QString reasoning;
        if (streamed) {
            const QJsonObject delta = choice.value(QStringLiteral("delta")).toObject();
            text = contentText(delta.value(QStringLiteral("content")));
            reasoning = reasoningText(delta);
            state.bytes += text.toUtf8().size() + reasoning.toUtf8().size();
        } else {
            const QJsonValue message = choice.value(QStringLiteral("message"));
            text = message.isObject() ? contentText(message.toObject().value(QStringLiteral("content")))
                                      : choice.value(QStringLiteral("text")).toString(); // legacy completions shape
            reasoning = reasoningText(message.toObject());
            state.bytes = text.toUtf8().size() + reasoning.toUtf8().size();
        }
        if (state.bytes > settings.maxAnswerBytes) {
            *kind = LlmFailure::TooLarge;
            *error = tooLargeMessage(settings, state.bytes,
                                     streamed ? state.text.left(kTooLargeHeadChars) + text.left(kTooLargeHeadChars)
                                              : text.left(kTooLargeHeadChars + 1));
            state.text.clear(); // neither kept nor shown
            return false;
        }
        // What is shown as it arrives adds up to the stored text (withReasoning): the reasoning in
        // its <think> section, closed when the content starts.
        QString shown;
        if (streamed) {
            if (!reasoning.isEmpty())
                shown += (state.reasoning.isEmpty() ? QStringLiteral("<think>\n") : QString()) + reasoning;
            if (!text.isEmpty() && state.text.isEmpty() && !(state.reasoning + reasoning).isEmpty())
                shown += QStringLiteral("\n</think>\n\n");
            shown += text;
            state.text += text;
            state.reasoning += reasoning;
        } else {
            state.text = text;
            state.reasoning = reasoning;
            shown = withReasoning(reasoning, text);
        }
        const QString finish = choice.value(QStringLiteral("finish_reason")).toString();
        if (!finish.isEmpty())
            state.finishReason = finish;
        if (!shown.isEmpty()) {
            pieces->append({call->firstIndex + index, shown});
            if (streamed)
                call->textShown = true;
        }
    }
    return true;
}

void LlmClient::onFinished(Call* call)
{
    QNetworkReply* reply = call->reply;
    noteHeaders(call);
    const QByteArray rest = reply->readAll();
    const QNetworkReply::NetworkError error = reply->error();
    const QString errorString = reply->errorString();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString reason = reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString();
    const int retryAfterMs = parseRetryAfterMs(reply->rawHeader("Retry-After"));
    const QString url = reply->url().toString();
    releaseReply(call);

    if (call->sse) {
        if (!feedSse(call, rest))
            return;
        // The last line or event may lack its terminating newline.
        if (!call->lineBuffer.isEmpty() && !endLine(call, std::exchange(call->lineBuffer, QByteArray())))
            return;
        if (call->eventHasData && !dispatchEvent(call))
            return;
        if (call->sawDone) {
            callSucceeded(call);
            return;
        }
        const QString how = error == QNetworkReply::NoError ? QStringLiteral("the server ended the stream")
                                                            : QStringLiteral("the connection failed: ") + errorString;
        if (!call->textShown && retryableNetworkError(error)) {
            attemptFailed(call, LlmFailure::Connection, how + QStringLiteral(" (%1)").arg(url), true);
            return;
        }
        attemptFailed(call, LlmFailure::Truncated,
                      QStringLiteral("the stream from %1 ended without [DONE]: %2").arg(url, how) + partialText(call),
                      false);
        return;
    }

    call->raw += rest;
    if (call->raw.size() > rawLimit(findRequest(call->requestId)->settings, call->choices)) {
        const LlmSettings& settings = findRequest(call->requestId)->settings;
        attemptFailed(
            call, LlmFailure::TooLarge,
            tooLargeMessage(settings, call->raw.size(), QString::fromUtf8(call->raw.left(kTooLargeHeadChars * 4))),
            false);
        return;
    }
    if (status >= 400) {
        const QString message = QStringLiteral("HTTP %1 %2 from %3: %4")
                                    .arg(QString::number(status), reason, url, errorMessageFromBody(call->raw));
        // 429 and 5xx are the server's state, which may change; other 4xx are this request's fault.
        const bool retryable = status == 429 || status >= 500;
        attemptFailed(call, LlmFailure::Http, message, retryable, retryable ? retryAfterMs : -1);
        return;
    }
    if (error != QNetworkReply::NoError) {
        attemptFailed(call, LlmFailure::Connection, QStringLiteral("%1 (%2)").arg(errorString, url),
                      retryableNetworkError(error));
        return;
    }
    if (status < 200 || status >= 300) {
        attemptFailed(call, LlmFailure::Http,
                      QStringLiteral("HTTP %1 %2 from %3").arg(QString::number(status), reason, url), false);
        return;
    }
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(call->raw, &parseError);
    if (!document.isObject()) {
        attemptFailed(call, LlmFailure::InvalidResponse,
                      QStringLiteral("invalid JSON from %1 (%2 at offset %3): %4")
                          .arg(url,
                               parseError.error == QJsonParseError::NoError ? QStringLiteral("not an object")
                                                                            : parseError.errorString(),
                               QString::number(parseError.offset), excerpt(call->raw)),
                      false);
        return;
    }
    const QJsonObject object = document.object();
    if (object.contains(QStringLiteral("error"))) {
        attemptFailed(call, LlmFailure::ServerError,
                      QStringLiteral("the server reported an error: ") + errorMessageFromBody(call->raw), false);
        return;
    }
    QList<QPair<int, QString>> pieces;
    QString problem, kind;
    call->raw.clear(); // parsed: the body is not needed any more
    if (!absorbChunk(call, object, false, &pieces, &problem, &kind)) {
        attemptFailed(call, kind, problem, false);
        return;
    }
    const Request* request = findRequest(call->requestId);
    // A server that ignored `stream` still shows its text, in one piece per choice.
    if (request->settings.stream && !emitText(call->requestId, pieces))
        return;
    callSucceeded(call);
}

void LlmClient::onIdleTimeout(Call* call)
{
    if (call->sawDone) { // the answer is complete; the server only failed to close
        releaseReply(call);
        callSucceeded(call);
        return;
    }
    call->timedOut = true;
    const Request* request = findRequest(call->requestId);
    const QString url = call->reply ? call->reply->url().toString() : QString();
    releaseReply(call);
    const QString message = QStringLiteral("no response from %1 for %2").arg(url, seconds(request->settings.timeoutMs));
    if (call->textShown)
        attemptFailed(call, LlmFailure::Timeout,
                      message + QStringLiteral(" in the middle of the stream") + partialText(call), false);
    else
        attemptFailed(call, LlmFailure::Timeout, message, true);
}

void LlmClient::onDeadline(qint64 requestId)
{
    Request* request = findRequest(requestId);
    if (!request)
        return;
    int attempts = 0;
    bool receiving = false;
    for (const auto& call : request->calls) {
        attempts = std::max(attempts, call->attempt);
        receiving = receiving || (call->reply && call->firstByteMs >= 0);
    }
    const QString url = endpoint(request->settings, QStringLiteral("/chat/completions")).toString();
    failRequest(requestId, LlmFailure::Timeout,
                QStringLiteral("no complete answer from %1 within the model time-out of %2 (%3 attempt%4; %5)")
                    .arg(url, seconds(request->settings.deadlineMs))
                    .arg(attempts)
                    .arg(attempts == 1 ? QString() : QStringLiteral("s"))
                    .arg(receiving ? QStringLiteral("the server was still sending")
                                   : QStringLiteral("the server had sent nothing")));
}

void LlmClient::stopDeadline(Request* request)
{
    if (!request->deadlineTimer)
        return;
    QTimer* timer = std::exchange(request->deadlineTimer, nullptr);
    timer->stop();
    timer->disconnect(this);
    timer->deleteLater(); // we may be inside its timeout()
}

qint64 LlmClient::remainingMs(const Request* request) const
{
    if (request->settings.deadlineMs <= 0)
        return -1;
    return std::max<qint64>(0, request->settings.deadlineMs - request->age.elapsed());
}

qsizetype LlmClient::rawLimit(const LlmSettings& settings, int choices)
{
    return qsizetype(std::max(1, choices)) * std::max<qsizetype>(0, settings.maxAnswerBytes) * kJsonEscapeFactor +
           kEnvelopeBytes;
}

QString LlmClient::tooLargeMessage(const LlmSettings& settings, qsizetype seen, const QString& head)
{
    QString start = head.left(kTooLargeHeadChars).simplified();
    if (head.size() > kTooLargeHeadChars)
        start += QStringLiteral("…");
    return QStringLiteral("the answer is over the limit of %1 bytes (%2 bytes had arrived when it was refused; "
                          "it is not kept); it starts: %3")
        .arg(settings.maxAnswerBytes)
        .arg(seen)
        .arg(start);
}

void LlmClient::releaseReply(Call* call)
{
    if (call->idleTimer)
        call->idleTimer->stop();
    if (!call->reply)
        return;
    QNetworkReply* reply = std::exchange(call->reply, nullptr);
    reply->disconnect(this); // abort() emits finished() at once; nobody must hear it
    if (reply->isRunning())
        reply->abort();
    reply->deleteLater();
    --m_activeCalls;
}

void LlmClient::dropCall(Call* call)
{
    if (call->queued) {
        m_queue.removeOne(call);
        call->queued = false;
    }
    releaseReply(call);
    for (QTimer** timer : {&call->idleTimer, &call->backoffTimer}) {
        if (!*timer)
            continue;
        (*timer)->stop();
        (*timer)->disconnect(this);
        (*timer)->deleteLater(); // we may be inside its timeout()
        *timer = nullptr;
    }
}

QString LlmClient::partialText(const Call* call) const
{
    if (call->state.empty())
        return QStringLiteral("; no text had arrived");
    QString text = QStringLiteral("; partial text:");
    for (const auto& entry : call->state) {
        if (call->choices > 1)
            text += QStringLiteral("\n[choice %1]").arg(call->firstIndex + entry.first);
        text += QLatin1Char('\n') + entry.second.text;
    }
    return text;
}

void LlmClient::attemptFailed(Call* call, const QString& kind, const QString& message, bool retryable, int retryAfterMs)
{
    const qint64 requestId = call->requestId;
    const Request* request = findRequest(requestId);
    const LlmSettings& settings = request->settings;
    releaseReply(call);
    if (retryable && call->attempt <= settings.maxRetries) {
        int delay;
        if (retryAfterMs >= 0) {
            if (retryAfterMs > settings.maxRetryAfterMs) {
                failRequest(requestId, kind,
                            message + QStringLiteral(" (the server asks to retry after %1, beyond the limit of %2)")
                                          .arg(seconds(retryAfterMs), seconds(settings.maxRetryAfterMs)));
                return;
            }
            // Never earlier than asked; a little later, so clients told the same do not return together.
            delay = retryAfterMs + int(QRandomGenerator::global()->bounded(std::min(retryAfterMs / 10, 1000) + 1));
        } else {
            const qint64 base =
                std::min<qint64>(qint64(std::max(0, settings.retryBaseDelayMs)) << std::min(call->attempt - 1, 20),
                                 settings.retryMaxDelayMs);
            const qint64 jitter = QRandomGenerator::global()->bounded(base / 2 + 1);
            delay = int(std::min<qint64>(base + jitter, settings.retryMaxDelayMs));
        }
        const qint64 left = remainingMs(request);
        if (left >= 0 && delay >= left) {
            failRequest(requestId, kind,
                        message + QStringLiteral(" (after %1 attempt%2; no time left for another within the model "
                                                 "time-out of %3)")
                                      .arg(call->attempt)
                                      .arg(call->attempt > 1 ? QStringLiteral("s") : QString())
                                      .arg(seconds(settings.deadlineMs)));
            return;
        }
        call->backoffTimer->start(std::max(0, delay));
        pump(); // the slot is free while this call waits
        Q_EMIT retryScheduled(requestId, call->attempt + 1, delay, message);
        return;
    }
    QString full = message;
    if (call->attempt > 1)
        full += QStringLiteral(" (after %1 attempts)").arg(call->attempt);
    failRequest(requestId, kind, full);
}

void LlmClient::callSucceeded(Call* call)
{
    const qint64 requestId = call->requestId;
    Request* request = findRequest(requestId);
    if (int(call->state.size()) < call->choices) {
        attemptFailed(call, LlmFailure::InvalidResponse,
                      QStringLiteral("the server returned %1 of %2 choices (does it support n? if not, turn "
                                     "serverSupportsN off)")
                          .arg(call->state.size())
                          .arg(call->choices),
                      false);
        return;
    }
    const qint64 totalMs = call->clock.elapsed();
    for (int i = 0; i < call->choices; ++i) {
        Completion& completion = request->completions[call->firstIndex + i];
        const ChoiceState& state = call->state[i];
        completion.index = call->firstIndex + i;
        completion.text = withReasoning(state.reasoning, state.text);
        completion.finishReason = state.finishReason;
        completion.promptTokens = call->promptTokens;
        completion.completionTokens = call->completionTokens;
        completion.usageShared = call->choices > 1;
        completion.firstByteMs = call->firstByteMs;
        completion.totalMs = totalMs;
        completion.attempts = call->attempt;
        completion.seed = call->seed;
    }
    call->done = true;
    dropCall(call);
    if (--request->callsLeft > 0) {
        pump();
        return;
    }
    const auto it = m_requests.find(requestId);
    std::unique_ptr<Request> finished = std::move(it->second);
    m_requests.erase(it);
    stopDeadline(finished.get());
    pump();
    Q_EMIT completionFinished(requestId, finished->completions);
}

void LlmClient::failRequest(qint64 requestId, const QString& kind, const QString& message, bool queued)
{
    const auto it = m_requests.find(requestId);
    if (it == m_requests.end())
        return;
    std::unique_ptr<Request> request = std::move(it->second);
    m_requests.erase(it);
    for (auto& call : request->calls) // the siblings' candidates are of no use alone
        dropCall(call.get());
    stopDeadline(request.get());
    pump();
    if (queued) {
        QMetaObject::invokeMethod(
            this, [this, requestId, kind, message] { Q_EMIT completionFailed(requestId, kind, message); },
            Qt::QueuedConnection);
        return;
    }
    Q_EMIT completionFailed(requestId, kind, message);
}

void LlmClient::listModels()
{
    const LlmSettings& settings = m_settings;
    QNetworkReply* reply =
        m_network->get(makeRequest(endpoint(settings, QStringLiteral("/models")), settings, "application/json"));
    auto* timer = new QTimer(reply);
    timer->setSingleShot(true);
    connect(timer, &QTimer::timeout, reply, [reply] {
        reply->setProperty("kwbTimedOut", true);
        reply->abort();
    });
    connect(reply, &QNetworkReply::readyRead, timer, qOverload<>(&QTimer::start));
    timer->start(std::max(1, settings.timeoutMs));
    const int timeoutMs = settings.timeoutMs;
    connect(reply, &QNetworkReply::finished, this, [this, reply, timeoutMs] {
        reply->deleteLater();
        const QString url = reply->url().toString();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QByteArray body = reply->readAll();
        if (reply->property("kwbTimedOut").toBool()) {
            Q_EMIT modelsFailed(QStringLiteral("no response from %1 for %2").arg(url, seconds(timeoutMs)));
            return;
        }
        if (status >= 400) {
            Q_EMIT modelsFailed(QStringLiteral("HTTP %1 %2 from %3: %4")
                                    .arg(QString::number(status),
                                         reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString(), url,
                                         errorMessageFromBody(body)));
            return;
        }
        if (reply->error() != QNetworkReply::NoError) {
            Q_EMIT modelsFailed(QStringLiteral("%1 (%2)").arg(reply->errorString(), url));
            return;
        }
        const QJsonDocument document = QJsonDocument::fromJson(body);
        const QJsonValue data = document.object().value(QStringLiteral("data"));
        if (!data.isArray()) {
            Q_EMIT modelsFailed(
                QStringLiteral("no model list (\"data\") in the answer from %1: %2").arg(url, excerpt(body)));
            return;
        }
        QStringList models;
        for (const QJsonValue& model : data.toArray()) {
            const QString id = model.toObject().value(QStringLiteral("id")).toString();
            if (!id.isEmpty())
                models.append(id);
        }
        Q_EMIT modelsAvailable(models);
    });
}

} // namespace kwb

#include "scriptedllmserver.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QTcpSocket>
#include <QTimer>

#include <functional>
#include <memory>

namespace kwb::test {

namespace {

QByteArray reasonPhrase(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

QByteArray compact(const QJsonObject& object)
{
    return QJsonDocument(object).toJson(QJsonDocument::Compact);
}

QByteArray httpChunk(const QByteArray& bytes)
{
    return QByteArray::number(bytes.size(), 16) + "\r\n" + bytes + "\r\n";
}

// Writes pieces one by one with a pause between, then calls done; stops when the socket goes.
void writePaced(QTcpSocket* socket, const QList<QByteArray>& pieces, int delayMs, std::function<void()> done)
{
    auto next = std::make_shared<std::function<void(int)>>();
    QPointer<QTcpSocket> guard(socket);
    *next = [guard, pieces, delayMs, done, next](int i) {
        if (!guard || guard->state() != QAbstractSocket::ConnectedState)
            return;
        if (i >= pieces.size()) {
            done();
            *next = nullptr; // break the self-reference
            return;
        }
        guard->write(pieces.at(i));
        guard->flush();
        QTimer::singleShot(delayMs, guard, [next, i] {
            if (*next)
                (*next)(i + 1);
        });
    };
    (*next)(0);
}

} // namespace

ScriptedLlmServer::ScriptedLlmServer(QObject* parent)
    : QObject(parent)
{
    connect(&m_server, &QTcpServer::newConnection, this, &ScriptedLlmServer::onNewConnection);
}

ScriptedLlmServer::~ScriptedLlmServer()
{
    m_server.close();
    const QList<QTcpSocket*> sockets = m_connections.keys();
    m_connections.clear();
    for (QTcpSocket* socket : sockets) {
        socket->disconnect(this);
        socket->abort();
        delete socket;
    }
}

bool ScriptedLlmServer::start(quint16 port)
{
    return m_server.listen(QHostAddress::LocalHost, port);
}

QUrl ScriptedLlmServer::baseUrl() const
{
    return QUrl(QStringLiteral("http://127.0.0.1:%1/v1").arg(port()));
}

void ScriptedLlmServer::onNewConnection()
{
    while (QTcpSocket* socket = m_server.nextPendingConnection()) {
        m_connections.insert(socket, Connection());
        connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onReadyRead(socket); });
        connect(socket, &QTcpSocket::bytesWritten, this, [this](qint64 bytes) { m_bytesWritten += bytes; });
        connect(socket, &QTcpSocket::disconnected, this, [this, socket] {
            release(socket);
            m_connections.remove(socket);
            socket->deleteLater();
        });
    }
}

void ScriptedLlmServer::onReadyRead(QTcpSocket* socket)
{
    auto it = m_connections.find(socket);
    if (it == m_connections.end())
        return;
    Connection& connection = *it;
    connection.buffer += socket->readAll();
    if (connection.handled)
        return;
    const qsizetype headerEnd = connection.buffer.indexOf("\r\n\r\n");
    if (headerEnd < 0)
        return;
    const QList<QByteArray> lines = connection.buffer.left(headerEnd).split('\n');
    const QList<QByteArray> requestLine = lines.value(0).trimmed().split(' ');
    QMap<QByteArray, QByteArray> headers;
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const qsizetype colon = lines.at(i).indexOf(':');
        if (colon > 0)
            headers.insert(lines.at(i).left(colon).trimmed().toLower(), lines.at(i).mid(colon + 1).trimmed());
    }
    const qsizetype length = headers.value("content-length", "0").toLongLong();
    if (connection.buffer.size() < headerEnd + 4 + length)
        return;
    connection.handled = true;
    m_headers.append(headers);
    handle(socket, requestLine.value(0), requestLine.value(1), connection.buffer.mid(headerEnd + 4, length));
}

void ScriptedLlmServer::handle(QTcpSocket* socket, const QByteArray& method, const QByteArray& path,
                               const QByteArray& body)
{
    m_paths.append(QString::fromUtf8(path));
    if (method == "GET" && path == "/v1/models") {
        if (m_modelsErrorStatus) {
            sendSimple(socket, m_modelsErrorStatus, "application/json",
                       R"({"error":{"message":"models are not available here","type":"server_error"}})");
            return;
        }
        QJsonArray data;
        for (const QString& model : m_models)
            data.append(QJsonObject{{QStringLiteral("id"), model},
                                    {QStringLiteral("object"), QStringLiteral("model")},
                                    {QStringLiteral("owned_by"), QStringLiteral("scripted")}});
        sendSimple(socket, 200, "application/json",
                   compact({{QStringLiteral("object"), QStringLiteral("list")}, {QStringLiteral("data"), data}}));
        return;
    }
    if (method == "POST" && path == "/tokenize" && m_tokenizer) {
        // As vLLM answers: the count and the tokens (here only their number matters).
        const QJsonObject request = QJsonDocument::fromJson(body).object();
        m_tokenizeRequests.append(request);
        const int count = m_tokenizer(request.value(QLatin1String("prompt")).toString());
        QJsonArray tokens;
        for (int i = 0; i < count; ++i)
            tokens.append(i);
        sendSimple(socket, 200, "application/json",
                   compact({{QStringLiteral("count"), count}, {QStringLiteral("tokens"), tokens}}));
        return;
    }
    if (method != "POST" || path != "/v1/chat/completions") {
        sendSimple(socket, 404, "application/json", R"({"error":{"message":"no such endpoint","type":"not_found"}})");
        return;
    }
    const QJsonObject request = QJsonDocument::fromJson(body).object();
    m_requests.append(request);
    m_connections[socket].counted = true;
    ++m_active;
    m_maxConcurrent = std::max(m_maxConcurrent, m_active);
    const Reply reply = !m_script.isEmpty() ? m_script.takeFirst() : m_responder ? m_responder(request) : m_default;
    if (reply.delayMs > 0) {
        QTimer::singleShot(reply.delayMs, socket,
                           [this, socket, request, reply] { answerChat(socket, request, reply); });
        return;
    }
    answerChat(socket, request, reply);
}

void ScriptedLlmServer::answerChat(QTcpSocket* socket, const QJsonObject& request, const Reply& reply)
{
    switch (reply.action) {
    case Action::HttpError: {
        QList<QByteArray> extra;
        if (reply.retryAfter >= 0)
            extra.append("Retry-After: " + QByteArray::number(reply.retryAfter));
        const QByteArray body = reply.body.isEmpty()
                                    ? QByteArray(R"({"error":{"message":"scripted failure )") +
                                          QByteArray::number(reply.status) + R"(","type":"server_error"}})"
                                    : reply.body;
        sendSimple(socket, reply.status, "application/json", body, extra);
        return;
    }
    case Action::InvalidJson:
        sendSimple(socket, 200, "application/json", R"({"choices": [{"index": 0, "message": )");
        return;
    case Action::Silent: return; // the connection stays open until the client gives up
    case Action::Trickle: {
        const bool stream = request.value(QStringLiteral("stream")).toBool();
        // A body that never ends: whitespace is valid before JSON; ':' lines are SSE comments.
        socket->write(QByteArray("HTTP/1.1 200 OK\r\nContent-Type: ") +
                      (stream ? "text/event-stream" : "application/json") +
                      "\r\nContent-Length: 100000000\r\nConnection: close\r\n\r\n");
        auto* timer = new QTimer(socket);
        auto sent = std::make_shared<qint64>(0);
        QObject::connect(timer, &QTimer::timeout, socket, [socket, stream, sent] {
            socket->write(stream ? (*sent % 2 == 0 ? ":" : "\n") : " ");
            ++*sent;
        });
        timer->start(std::max(1, reply.trickleMs));
        return;
    }
    case Action::EmptyChoices:
        sendSimple(socket, 200, "application/json",
                   R"({"id":"chatcmpl-empty","object":"chat.completion","choices":[],)"
                   R"("usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}})");
        return;
    default: break;
    }
    if (request.value(QStringLiteral("stream")).toBool())
        answerStream(socket, request, reply);
    else
        answerJson(socket, request, reply);
}

namespace {

QString choiceText(const ScriptedLlmServer::Reply& reply, const QJsonObject& request, int index)
{
    QString text = reply.texts.isEmpty() ? QString() : reply.texts.value(std::min<int>(index, reply.texts.size() - 1));
    if (reply.verbatim)
        return text;
    const QJsonValue seed = request.value(QStringLiteral("seed"));
    text.replace(QLatin1String("{seed}"),
                 seed.isDouble() ? QString::number(qint64(seed.toDouble())) : QStringLiteral("none"));
    text.replace(QLatin1String("{i}"), QString::number(index));
    return text;
}

} // namespace

void ScriptedLlmServer::answerJson(QTcpSocket* socket, const QJsonObject& request, const Reply& reply)
{
    const int n = std::max(1, request.value(QStringLiteral("n")).toInt(1));
    QJsonArray choices;
    for (int i = 0; i < n; ++i) {
        const QString text = choiceText(reply, request, i);
        QJsonObject message{{QStringLiteral("role"), QStringLiteral("assistant")}, {QStringLiteral("content"), text}};
        if (reply.contentParts)
            message.insert(QStringLiteral("content"),
                           QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("text")},
                                                  {QStringLiteral("text"), text.left(text.size() / 2)}},
                                      QJsonObject{{QStringLiteral("type"), QStringLiteral("text")},
                                                  {QStringLiteral("text"), text.mid(text.size() / 2)}}});
        if (!reply.reasoning.isEmpty())
            message.insert(reply.reasoningField, reply.reasoning.value(i, reply.reasoning.last()));
        choices.append(QJsonObject{{QStringLiteral("index"), i},
                                   {QStringLiteral("message"), message},
                                   {QStringLiteral("finish_reason"), reply.finishReason}});
    }
    const QJsonObject usage{{QStringLiteral("prompt_tokens"), reply.promptTokens},
                            {QStringLiteral("completion_tokens"), reply.completionTokens * n},
                            {QStringLiteral("total_tokens"), reply.promptTokens + reply.completionTokens * n}};
    const QByteArray body = compact({{QStringLiteral("id"), QStringLiteral("chatcmpl-scripted")},
                                     {QStringLiteral("object"), QStringLiteral("chat.completion")},
                                     {QStringLiteral("created"), 0},
                                     {QStringLiteral("model"), request.value(QStringLiteral("model"))},
                                     {QStringLiteral("choices"), choices},
                                     {QStringLiteral("usage"), usage}});
    if (reply.action != Action::Drop) {
        sendSimple(socket, 200, "application/json", body);
        return;
    }
    // Promise the whole body, send half of it, then reset.
    socket->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                  QByteArray::number(body.size()) + "\r\n\r\n" + body.left(body.size() / 2));
    socket->flush();
    QTimer::singleShot(50, socket, [this, socket] { finish(socket, true); });
}

void ScriptedLlmServer::answerStream(QTcpSocket* socket, const QJsonObject& request, const Reply& reply)
{
    const int n = std::max(1, request.value(QStringLiteral("n")).toInt(1));
    const QByteArray eol = reply.crlf ? "\r\n" : "\n";
    auto event = [&](const QByteArray& data) {
        QByteArray bytes;
        if (reply.comments)
            bytes += ": keep-alive" + eol + eol;
        const qsizetype comma = data.indexOf(',');
        if (reply.multiLineData && comma > 0) // JSON allows the newline the SSE join puts here
            bytes += "data: " + data.left(comma + 1) + eol + "data: " + data.mid(comma + 1) + eol;
        else
            bytes += "data: " + data + eol;
        return bytes + eol;
    };
    auto chunkObject = [](const QJsonArray& choices) {
        return compact({{QStringLiteral("id"), QStringLiteral("chatcmpl-scripted")},
                        {QStringLiteral("object"), QStringLiteral("chat.completion.chunk")},
                        {QStringLiteral("choices"), choices}});
    };
    auto choice = [](int index, const QJsonObject& delta, const QJsonValue& finish) {
        return QJsonObject{{QStringLiteral("index"), index},
                           {QStringLiteral("delta"), delta},
                           {QStringLiteral("finish_reason"), finish}};
    };

    QList<QByteArray> events;
    QJsonArray first;
    for (int i = 0; i < n; ++i)
        first.append(
            choice(i, {{QStringLiteral("role"), QStringLiteral("assistant")}, {QStringLiteral("content"), QString()}},
                   QJsonValue::Null));
    events.append(event(chunkObject(first)));
    if (reply.action == Action::StreamError)
        events.append(event(R"({"error":{"message":"the model crashed mid-stream","type":"server_error"}})"));
    QStringList texts;
    int longest = 0;
    for (int i = 0; i < n; ++i) {
        texts.append(choiceText(reply, request, i));
        longest = std::max(longest, int(texts.last().size()));
    }
    const int step = std::max(1, reply.chunkChars);
    // Reasoning first, as a reasoning parser streams it: its own deltas, before the content's.
    for (int i = 0; i < n && !reply.reasoning.isEmpty(); ++i) {
        const QString thought = reply.reasoning.value(i, reply.reasoning.last());
        for (int offset = 0; offset < thought.size(); offset += step)
            events.append(
                event(chunkObject({choice(i, {{reply.reasoningField, thought.mid(offset, step)}}, QJsonValue::Null)})));
    }
    for (int offset = 0; offset < longest; offset += step)
        for (int i = 0; i < n; ++i)
            if (offset < texts.at(i).size())
                events.append(event(chunkObject(
                    {choice(i, {{QStringLiteral("content"), texts.at(i).mid(offset, step)}}, QJsonValue::Null)})));
    for (int i = 0; i < n; ++i)
        events.append(event(chunkObject({choice(i, QJsonObject(), reply.finishReason)})));
    if (request.value(QStringLiteral("stream_options")).toObject().value(QStringLiteral("include_usage")).toBool())
        events.append(
            event(compact({{QStringLiteral("id"), QStringLiteral("chatcmpl-scripted")},
                           {QStringLiteral("object"), QStringLiteral("chat.completion.chunk")},
                           {QStringLiteral("choices"), QJsonArray()},
                           {QStringLiteral("usage"),
                            QJsonObject{{QStringLiteral("prompt_tokens"), reply.promptTokens},
                                        {QStringLiteral("completion_tokens"), reply.completionTokens * n}}}})));
    bool reset = false;
    if (reply.action == Action::Drop) {
        events = events.mid(0, std::max<qsizetype>(2, events.size() / 2));
        reset = true;
    } else if (reply.action == Action::Answer) {
        events.append(event("[DONE]"));
    } // Truncate and StreamError: no [DONE]

    QList<QByteArray> pieces;
    for (const QByteArray& bytes : events) {
        if (reply.splitWrites) { // the client must join a line that arrives in two reads
            const qsizetype half = bytes.size() / 2;
            pieces.append(httpChunk(bytes.left(half)));
            pieces.append(httpChunk(bytes.mid(half)));
        } else {
            pieces.append(httpChunk(bytes));
        }
    }
    if (!reset)
        pieces.append("0\r\n\r\n");
    socket->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                  "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    const int delay = reply.splitWrites ? std::max(5, reply.chunkDelayMs) : reply.chunkDelayMs;
    writePaced(socket, pieces, delay, [this, socket, reset] { finish(socket, reset); });
}

void ScriptedLlmServer::sendSimple(QTcpSocket* socket, int status, const QByteArray& contentType,
                                   const QByteArray& body, const QList<QByteArray>& extraHeaders)
{
    QByteArray head = "HTTP/1.1 " + QByteArray::number(status) + ' ' + reasonPhrase(status) + "\r\n";
    head += "Content-Type: " + contentType + "\r\nContent-Length: " + QByteArray::number(body.size()) +
            "\r\nConnection: close\r\n";
    for (const QByteArray& header : extraHeaders)
        head += header + "\r\n";
    socket->write(head + "\r\n" + body);
    finish(socket);
}

void ScriptedLlmServer::finish(QTcpSocket* socket, bool reset)
{
    // Counted as done before the client can see the end, so a client that starts its next
    // request on seeing it is never counted twice.
    release(socket);
    if (reset) {
        socket->abort(); // no disconnected() after abort(): forget it here
        m_connections.remove(socket);
        socket->deleteLater();
    } else {
        socket->disconnectFromHost();
    }
}

void ScriptedLlmServer::release(QTcpSocket* socket)
{
    auto it = m_connections.find(socket);
    if (it == m_connections.end() || !it->counted)
        return;
    it->counted = false;
    --m_active;
}

} // namespace kwb::test

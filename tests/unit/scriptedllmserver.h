#pragma once
// A scripted OpenAI-compatible server for tests: plain HTTP/1.1 on 127.0.0.1 (a free port),
// answering `POST /v1/chat/completions` and `GET /v1/models` from replies queued by the test,
// one reply per chat request in order (the default reply when the script is empty). Answers are
// plain JSON or, when the request asks for `stream`, a chunked event stream; faults are part of
// the script. Every request is recorded so tests can check what the client sent, and the number
// of requests being answered at once is tracked so tests can check a concurrency limit.
// Every answer closes its connection.

#include <QByteArray>
#include <QHostAddress>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTcpServer>
#include <QUrl>

#include <functional>

class QTcpSocket;

namespace kwb::test {

class ScriptedLlmServer : public QObject
{
    Q_OBJECT
public:
    enum class Action {
        Answer,       ///< the texts, as JSON or as an event stream (as the request asks)
        HttpError,    ///< `status` with `body` (and Retry-After when retryAfter is set)
        Drop,         ///< start the answer (headers and part of the body or stream), then reset the connection
        InvalidJson,  ///< 200 with a body that is not JSON
        EmptyChoices, ///< 200 with `"choices": []`
        Truncate,     ///< an event stream that ends cleanly but without `data: [DONE]`
        StreamError,  ///< an event stream whose second event is `{"error": …}`
        Trickle,      ///< 200 headers, then one byte every trickleMs for ever (never a whole answer)
        Silent,       ///< accept the request and never answer
    };

    struct Reply
    {
        Action action = Action::Answer;
        /// One text per choice; a request for more choices than texts reuses the last. In a
        /// text, {seed} becomes the request's seed (or "none") and {i} the choice index, unless
        /// `verbatim`.
        QStringList texts = {QStringLiteral("Hello from the scripted server.")};
        /// Send the texts as they are: recorded model text has code with such braces (f"{i}").
        bool verbatim = false;
        /// Reasoning sent apart from the content, one per choice (as `reasoningField`: vLLM's
        /// reasoning parser's `reasoning_content`, Ollama's `reasoning`); none when empty.
        QStringList reasoning;
        QString reasoningField = QStringLiteral("reasoning_content");
        /// JSON answers: the content as a list of text parts (two), not a string.
        bool contentParts = false;
        QString finishReason = QStringLiteral("stop");
        int promptTokens = 12;
        int completionTokens = 7;
        int delayMs = 0;            ///< before anything is sent (beyond the client's timeout: a slow answer)
        int chunkChars = 4;         ///< stream: characters of text per event
        int chunkDelayMs = 0;       ///< stream: pause between events
        bool crlf = false;          ///< stream: CRLF line endings
        bool multiLineData = false; ///< stream: each event's JSON spread over two `data:` lines
        bool splitWrites = false;   ///< stream: every event written in two pieces, split mid-line
        bool comments = false;      ///< stream: a `: keep-alive` comment before each event
        int status = 500;           ///< HttpError
        QByteArray body;            ///< HttpError (default: an OpenAI-style error object)
        int retryAfter = -1;        ///< HttpError: Retry-After seconds
        int trickleMs = 100;        ///< Trickle: pause between bytes
    };

    explicit ScriptedLlmServer(QObject* parent = nullptr);
    /// Resets open connections without signals (they would reach a half-destroyed server).
    ~ScriptedLlmServer() override;

    /// Listens on 127.0.0.1 with a free port.
    /// Listens on 127.0.0.1:`port` (0: any free port, as the tests use).
    bool start(quint16 port = 0);
    quint16 port() const { return m_server.serverPort(); }
    /// `http://127.0.0.1:<port>/v1`
    QUrl baseUrl() const;

    void enqueue(const Reply& reply) { m_script.append(reply); }
    void setDefaultReply(const Reply& reply) { m_default = reply; }
    /// Replies computed from the request, when the script is empty (instead of the default).
    void setResponder(std::function<Reply(const QJsonObject& request)> responder)
    {
        m_responder = std::move(responder);
    }
    void setModels(const QStringList& models) { m_models = models; }
    /// Serve `POST /tokenize` (vLLM's and llama.cpp's, at the root) with this count of a prompt's
    /// tokens; unset, /tokenize is 404 like a server without one.
    void setTokenizer(std::function<int(const QString& prompt)> tokenizer) { m_tokenizer = std::move(tokenizer); }
    /// Bodies of every /tokenize request, in arrival order.
    QList<QJsonObject> tokenizeRequests() const { return m_tokenizeRequests; }
    /// Answer `/v1/models` with this status and error body instead (0: answer normally).
    void setModelsError(int status) { m_modelsErrorStatus = status; }

    /// Bodies of every chat-completion request, in arrival order.
    QList<QJsonObject> requests() const { return m_requests; }
    /// Request headers (lower-case names) of every request, chat and models, in arrival order.
    QList<QMap<QByteArray, QByteArray>> headers() const { return m_headers; }
    QStringList paths() const { return m_paths; }
    /// The most requests that were being answered at the same time.
    int maxConcurrent() const { return m_maxConcurrent; }
    int activeCount() const { return m_active; }
    /// Bytes written to clients so far, all connections (a client that stops reading stops this).
    qint64 bytesWritten() const { return m_bytesWritten; }

private:
    struct Connection
    {
        QByteArray buffer;
        bool handled = false;
        bool counted = false;
    };

    void onNewConnection();
    void onReadyRead(QTcpSocket* socket);
    void handle(QTcpSocket* socket, const QByteArray& method, const QByteArray& path, const QByteArray& body);
    void answerChat(QTcpSocket* socket, const QJsonObject& request, const Reply& reply);
    void answerJson(QTcpSocket* socket, const QJsonObject& request, const Reply& reply);
    void answerStream(QTcpSocket* socket, const QJsonObject& request, const Reply& reply);
    void sendSimple(QTcpSocket* socket, int status, const QByteArray& contentType, const QByteArray& body,
                    const QList<QByteArray>& extraHeaders = {});
    void finish(QTcpSocket* socket, bool reset = false);
    void release(QTcpSocket* socket);

    QTcpServer m_server;
    QList<Reply> m_script;
    Reply m_default;
    std::function<Reply(const QJsonObject&)> m_responder;
    std::function<int(const QString&)> m_tokenizer;
    QList<QJsonObject> m_tokenizeRequests;
    QStringList m_models = {QStringLiteral("model-a"), QStringLiteral("model-b")};
    int m_modelsErrorStatus = 0;
    QList<QJsonObject> m_requests;
    QList<QMap<QByteArray, QByteArray>> m_headers;
    QStringList m_paths;
    QMap<QTcpSocket*, Connection> m_connections;
    int m_active = 0;
    int m_maxConcurrent = 0;
    qint64 m_bytesWritten = 0;
};

} // namespace kwb::test

#pragma once
// A client for OpenAI-compatible chat completions (`POST {base}/chat/completions`) as served by
// llama.cpp's server, vLLM, Ollama, LM Studio and SGLang, and for `GET {base}/models`.
// Event-driven on the owner's thread through QNetworkAccessManager: no threads, no locks, no
// blocking calls.
//
// One complete() call is one logical request that yields `n` candidates: either in one HTTP call
// with the server's own `n` (when LlmSettings::serverSupportsN says the server has it), or as n
// HTTP calls run in parallel, each with seed+i when a seed is set. HTTP calls from every request
// share one concurrency limit (the model server is the scarce resource). A call is retried with
// exponential backoff and jitter on 429 (honouring Retry-After), 5xx, refused or reset
// connections and time-outs; never on other 4xx. A streamed call that has already shown text is
// not retried (its text would appear twice): it fails as truncated and keeps its partial text.
// A request has a total deadline (LlmSettings::deadlineMs: connecting, waiting, reading and every
// retry), so a server that trickles bytes or never answers costs at most that; an answer over
// LlmSettings::maxAnswerBytes is refused while it arrives (too_large) and never handed on.
//
// Every request ends in exactly one completionFinished() or completionFailed(), always emitted
// from the event loop, never from inside complete() or cancel().

#include "core/protocol/defaults.h"
#include "core/protocol/protocollimits.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QNetworkReply>
#include <QObject>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QUrl>
#include <QVector>

#include <map>
#include <memory>
#include <optional>
#include <vector>

class QNetworkAccessManager;
class QTimer;

namespace kwb {

/// The longest answer a model may give, in UTF-8 bytes: the candidate format's limit
/// (core/protocol/protocollimits.h, which the worker includes too; docs/candidate-format.md), so an
/// answer the worker would refuse as too_large is refused here before it is stored or reused.
constexpr qsizetype kMaxAnswerBytes = qsizetype(ProtocolLimits::kMaxAnswerBytes);
/// A model request's total time (connect, first byte, whole answer, retries) unless the run sets
/// another (`--model-timeout`, the Launch page's "Model time-out").
constexpr int kDefaultModelDeadlineMs = 300 * 1000;

/// The kinds with which a completion request fails (the `kind` of completionFailed()).
namespace LlmFailure {
inline const QString Http = QStringLiteral("http"); ///< an HTTP error status (after retries, where they apply)
inline const QString Connection = QStringLiteral("connection"); ///< refused, reset, host not found, … (after retries)
/// no bytes for LlmSettings::timeoutMs (after retries), or no whole answer within deadlineMs
inline const QString Timeout = QStringLiteral("timeout");
inline const QString InvalidResponse = QStringLiteral("invalid_response"); ///< not JSON, no choices, too few choices
inline const QString ServerError = QStringLiteral("server_error"); ///< a 200 answer or stream event carrying an `error`
inline const QString Truncated = QStringLiteral("truncated");      ///< a stream ended without `data: [DONE]`
inline const QString Cancelled = QStringLiteral("cancelled");
inline const QString BadRequest = QStringLiteral("bad_request"); ///< refused before anything was sent
inline const QString TooLarge = QStringLiteral("too_large");     ///< an answer over LlmSettings::maxAnswerBytes
} // namespace LlmFailure

struct LlmSettings
{
    /// Includes the API prefix; an URL without a path gets `/v1`.
    QUrl baseUrl = QUrl(defaults::endpoint());
    QString model;  ///< sent only when set (llama.cpp serves one model and needs none)
    QString apiKey; ///< sent as `Authorization: Bearer …` when set
    // Unset sampling options are left out of the request, so the server's defaults apply.
    std::optional<double> temperature;
    std::optional<double> topP;
    int maxTokens = 0; ///< 0: not sent
    std::optional<qint64> seed;
    /// When set (one per choice), choice i is asked with sampleSeeds[i] instead of seed + i; a
    /// server-side `n` call sends the first. RunController sets it so a sample's seed is its own.
    QList<qint64> sampleSeeds;
    QStringList stop;
    int n = 1; ///< candidates per request
    /// Send `n` to the server (vLLM, SGLang and llama.cpp have it; Ollama does not); otherwise
    /// the client issues n requests.
    bool serverSupportsN = false;
    bool stream = false;
    /// With streaming, ask for token counts in a last chunk (`stream_options.include_usage`);
    /// turn off for a server that refuses the field.
    bool streamUsage = true;
    /// A call fails (or is retried) when no bytes arrive for this long. Without streaming the
    /// server sends nothing until the whole answer is written, so this must cover a full answer.
    /// Capped by what is left of deadlineMs.
    int timeoutMs = 300 * 1000;
    /// The whole request, retries included, ends within this (0: no deadline).
    int deadlineMs = kDefaultModelDeadlineMs;
    /// A candidate's text longer than this (UTF-8 bytes) fails the request as too_large.
    qsizetype maxAnswerBytes = kMaxAnswerBytes;
    int maxRetries = 3;          ///< retries per HTTP call, after its first attempt
    int retryBaseDelayMs = 1000; ///< first backoff; doubles per retry, plus up to 50 % jitter
    int retryMaxDelayMs = 30 * 1000;
    /// A Retry-After longer than this fails the call at once instead of waiting.
    int maxRetryAfterMs = 120 * 1000;
    int concurrency = 4; ///< HTTP calls in flight at once, over all requests of a client
};

struct ChatMessage
{
    QString role; ///< "system", "user" or "assistant"
    QString content;
};

/// One candidate of a finished request.
struct Completion
{
    int index = 0; ///< 0 … n-1
    /// The response: its content, after a `<think>` section holding the reasoning where the server
    /// sent that apart (`reasoning_content`, `reasoning`); core/protocol/modeltext.h reads it.
    QString text;
    QString finishReason;      ///< as the server says: "stop", "length", …; empty when it says nothing
    int promptTokens = -1;     ///< from `usage`; -1 when the server gave none
    int completionTokens = -1; ///< from `usage`; -1 when the server gave none
    /// The counts above cover the whole HTTP call, which produced several candidates (server `n`).
    bool usageShared = false;
    qint64 firstByteMs = -1;    ///< from sending the successful attempt to its first response byte
    qint64 totalMs = -1;        ///< from sending the successful attempt to its end
    int attempts = 1;           ///< HTTP attempts its call took (1 = no retry)
    std::optional<qint64> seed; ///< the seed sent for it
};

class LlmClient : public QObject
{
    Q_OBJECT
public:
    explicit LlmClient(QObject* parent = nullptr);
    /// Aborts calls in flight; pending requests end without signals.
    ~LlmClient() override;

    /// The API key joins the secrets the workbench scrubs (core/model/secrets.h).
    void setSettings(const LlmSettings& settings);
    const LlmSettings& settings() const { return m_settings; }

    /// Starts a request with settings() and returns its id (rising, from 1).
    qint64 complete(const QList<ChatMessage>& messages);
    /// Starts a request with its own settings; the concurrency limit stays the client's.
    qint64 complete(const QList<ChatMessage>& messages, const LlmSettings& settings);
    /// Ends a pending request; it then fails with kind `cancelled`. False when id is not pending.
    bool cancel(qint64 requestId);
    void cancelAll();
    int pendingCount() const { return int(m_requests.size()); }
    /// HTTP calls in flight now (at most settings().concurrency).
    int activeCalls() const { return m_activeCalls; }

    /// GET {base}/models with settings(); ends in modelsAvailable() or modelsFailed().
    void listModels();

    /// The body complete() would send for one HTTP call (for the run store and for tests).
    static QJsonObject requestBody(const QList<ChatMessage>& messages, const LlmSettings& settings, int n,
                                   std::optional<qint64> seed);
    /// The server's own words from an error body (OpenAI, vLLM, Ollama, FastAPI shapes), else
    /// the start of the body.
    static QString errorMessageFromBody(const QByteArray& body);

Q_SIGNALS:
    /// Streaming: a piece of candidate `choiceIndex`'s text, in order.
    void textAvailable(qint64 requestId, int choiceIndex, const QString& chunk);
    /// An HTTP call of the request failed and will be tried again after delayMs.
    void retryScheduled(qint64 requestId, int attempt, int delayMs, const QString& reason);
    /// All n candidates, ordered by index.
    void completionFinished(qint64 requestId, const QVector<kwb::Completion>& completions);
    /// kind is an LlmFailure; message says what happened in the server's words where it had some.
    void completionFailed(qint64 requestId, const QString& kind, const QString& message);
    void modelsAvailable(const QStringList& models);
    void modelsFailed(const QString& message);

private:
    struct ChoiceState
    {
        QString text;
        QString reasoning; ///< what the server sent as reasoning_content or reasoning
        QString finishReason;
        qsizetype bytes = 0; ///< UTF-8 size of text and reasoning, counted as they arrive
    };
    /// One HTTP call: all n candidates (server n) or one of them.
    struct Call
    {
        qint64 requestId = 0;
        int firstIndex = 0; ///< Completion index of its choice 0
        int choices = 1;
        std::optional<qint64> seed;
        QByteArray body;
        int attempt = 0; ///< attempts started
        QNetworkReply* reply = nullptr;
        QTimer* idleTimer = nullptr;
        QTimer* backoffTimer = nullptr;
        bool queued = false;
        bool done = false;
        // per attempt
        QElapsedTimer clock;
        qint64 firstByteMs = -1;
        int httpStatus = 0;
        bool sse = false;
        bool headersSeen = false;
        bool timedOut = false;
        QByteArray raw;        ///< the body when not SSE
        QByteArray lineBuffer; ///< SSE: an incomplete line
        QByteArray eventData;  ///< SSE: data lines of the current event
        bool eventHasData = false;
        bool sawDone = false;
        bool textShown = false;
        std::map<int, ChoiceState> state;
        int promptTokens = -1;
        int completionTokens = -1;
    };
    struct Request
    {
        qint64 id = 0;
        LlmSettings settings;
        std::vector<std::unique_ptr<Call>> calls;
        QVector<Completion> completions;
        int callsLeft = 0;
        QTimer* deadlineTimer = nullptr;
        QElapsedTimer age; ///< since complete()
    };

    Request* findRequest(qint64 id);
    void enqueue(Call* call, bool front = false);
    void pump();
    void startAttempt(Call* call);
    void onReadyRead(Call* call);
    void onFinished(Call* call);
    void onIdleTimeout(Call* call);
    void onDeadline(qint64 requestId);
    /// Stops and releases the request's deadline timer (the request is ending).
    void stopDeadline(Request* request);
    /// Time left of the request's deadline in ms; -1 when it has none.
    qint64 remainingMs(const Request* request) const;
    /// The most bytes one HTTP body (or event-stream line) for `choices` candidates may take:
    /// the text limit with room for JSON escapes and the envelope.
    static qsizetype rawLimit(const LlmSettings& settings, int choices);
    /// The too_large message: the limit, what arrived, and a short head of the text.
    static QString tooLargeMessage(const LlmSettings& settings, qsizetype seen, const QString& head);
    void noteHeaders(Call* call);
    // These return false when the request is gone (failed, or cancelled by a slot): the caller
    // must then not touch the call again.
    bool feedSse(Call* call, const QByteArray& bytes);
    bool endLine(Call* call, QByteArray line);
    bool dispatchEvent(Call* call);
    bool emitText(qint64 requestId, const QList<QPair<int, QString>>& pieces);
    /// Takes a chat.completion(.chunk) object into the call's state and appends the text pieces
    /// to show to *pieces; false with *error set when it is unusable.
    /// *kind is the failure kind (invalid_response or too_large).
    bool absorbChunk(Call* call, const QJsonObject& object, bool streamed, QList<QPair<int, QString>>* pieces,
                     QString* error, QString* kind);
    void releaseReply(Call* call);
    /// Stops everything the call holds (queue place, reply, timers).
    void dropCall(Call* call);
    /// Ends the call's attempt as failed: retried when retryable and tries are left, else the
    /// whole request fails. retryAfterMs >= 0 is the server's Retry-After.
    void attemptFailed(Call* call, const QString& kind, const QString& message, bool retryable, int retryAfterMs = -1);
    void callSucceeded(Call* call);
    /// Ends the request at once; the signal is emitted now or, when queued, from the event loop.
    void failRequest(qint64 requestId, const QString& kind, const QString& message, bool queued = false);
    QString partialText(const Call* call) const;
    QUrl endpoint(const LlmSettings& settings, const QString& path) const;

    LlmSettings m_settings;
    QNetworkAccessManager* m_network = nullptr;
    qint64 m_nextId = 0;
    std::map<qint64, std::unique_ptr<Request>> m_requests;
    QList<Call*> m_queue; ///< calls waiting for a slot
    int m_activeCalls = 0;
};

} // namespace kwb

Q_DECLARE_METATYPE(kwb::Completion)

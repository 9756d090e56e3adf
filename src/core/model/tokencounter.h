#pragma once
// Counts a prompt's tokens with the model server's own tokenizer: `POST {root}/tokenize`, as
// vLLM (`{"prompt"}` -> `{"count", "tokens"}`) and llama.cpp's server (`{"content"}` ->
// `{"tokens"}`) serve it, root being the base URL without its `/v1`. Both fields are sent; the
// count is `count` where given, else the length of `tokens`. A server without the endpoint
// fails the count (then callers estimate: core/prompts/tokenbudget.h). The chat template's role
// markers are not in the count: ContextBudget adds kChatTemplateTokens for them.

#include <QHash>
#include <QObject>
#include <QString>
#include <QUrl>

class QNetworkAccessManager;
class QNetworkReply;

namespace kwb {

class TokenCounter : public QObject
{
    Q_OBJECT
public:
    explicit TokenCounter(QObject* parent = nullptr);

    void setServer(const QUrl& baseUrl, const QString& model = QString(), const QString& apiKey = QString());
    /// {scheme://host:port}{path without a trailing /v1}/tokenize
    static QUrl tokenizeUrl(const QUrl& baseUrl);

    /// Starts a count; ends in exactly one counted() or failed(), from the event loop.
    qint64 count(const QString& text);

Q_SIGNALS:
    void counted(qint64 id, int tokens);
    void failed(qint64 id, const QString& message);

private:
    QNetworkAccessManager* m_network = nullptr;
    QUrl m_baseUrl;
    QString m_model;
    QString m_apiKey;
    qint64 m_next = 0;
    int m_timeoutMs = 30 * 1000;
};

} // namespace kwb

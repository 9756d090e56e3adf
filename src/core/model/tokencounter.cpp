#include "core/model/tokencounter.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>

namespace kwb {

TokenCounter::TokenCounter(QObject* parent)
    : QObject(parent)
    , m_network(new QNetworkAccessManager(this))
{}

void TokenCounter::setServer(const QUrl& baseUrl, const QString& model, const QString& apiKey)
{
    m_baseUrl = baseUrl;
    m_model = model;
    m_apiKey = apiKey;
}

QUrl TokenCounter::tokenizeUrl(const QUrl& baseUrl)
{
    QUrl url = baseUrl;
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    if (path.endsWith(QLatin1String("/v1")))
        path.chop(3);
    url.setPath(path + QStringLiteral("/tokenize"));
    url.setQuery(QString());
    return url;
}

qint64 TokenCounter::count(const QString& text)
{
    const qint64 id = ++m_next;
    QNetworkRequest request(tokenizeUrl(m_baseUrl));
    request.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    request.setTransferTimeout(m_timeoutMs);
    if (!m_apiKey.isEmpty())
        request.setRawHeader("Authorization", "Bearer " + m_apiKey.toUtf8());
    QJsonObject body{{QStringLiteral("content"), text},
                     {QStringLiteral("prompt"), text},
                     {QStringLiteral("add_special_tokens"), false}};
    if (!m_model.isEmpty())
        body.insert(QStringLiteral("model"), m_model);
    QNetworkReply* reply = m_network->post(request, QJsonDocument(body).toJson(QJsonDocument::Compact));
    connect(reply, &QNetworkReply::finished, this, [this, reply, id] {
        reply->deleteLater();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QByteArray data = reply->readAll();
        if (reply->error() != QNetworkReply::NoError || status != 200)
            return Q_EMIT failed(id, QStringLiteral("POST %1: %2")
                                         .arg(reply->url().toString(),
                                              status ? QStringLiteral("HTTP %1").arg(status) : reply->errorString()));
        const QJsonObject o = QJsonDocument::fromJson(data).object();
        if (o.value(QLatin1String("count")).isDouble())
            return Q_EMIT counted(id, o.value(QLatin1String("count")).toInt());
        if (o.value(QLatin1String("tokens")).isArray())
            return Q_EMIT counted(id, int(o.value(QLatin1String("tokens")).toArray().size()));
        Q_EMIT failed(id, QStringLiteral("POST %1: no count or tokens in the answer").arg(reply->url().toString()));
    });
    return id;
}

} // namespace kwb

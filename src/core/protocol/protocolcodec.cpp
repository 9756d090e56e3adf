#include "protocolcodec.h"

#include "core/protocol/workerresponses.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>

namespace kwb {

namespace {

QString mebibytes(qsizetype bytes)
{
    return QString::number(double(bytes) / (1024.0 * 1024.0), 'f', 1) + QStringLiteral(" MiB");
}

// Enough of a bad line to recognise it in a message, without pasting megabytes into a log.
QString quoteStart(const QByteArray& line)
{
    constexpr qsizetype kQuote = 80;
    QString text = QString::fromUtf8(line.left(kQuote));
    return QLatin1Char('"') + text + (line.size() > kQuote ? QLatin1String("...\"") : QLatin1String("\""));
}

} // namespace

namespace ProtocolCodec {

QByteArray encodeRequest(const QJsonObject& request, QString* error)
{
    // Compact JSON never contains a raw newline (strings escape it), so one object is one line.
    QByteArray line = QJsonDocument(request).toJson(QJsonDocument::Compact);
    line.append('\n');
    if (line.size() > kMaxLineBytes) {
        if (error)
            *error = QStringLiteral("request of %1 exceeds the protocol's line limit of %2")
                         .arg(mebibytes(line.size()), mebibytes(kMaxLineBytes));
        return {};
    }
    return line;
}

QString checkHello(const QJsonObject& hello)
{
    const HelloInfo info = decodeHello(hello);
    if (!info.ok) {
        const QString message = errorMessage(hello);
        return QStringLiteral("the worker refused hello: %1")
            .arg(message.isEmpty() ? QStringLiteral("no reason given") : message);
    }
    if (!info.protocol)
        return QStringLiteral("the worker's hello states no protocol version: is it a kwb-worker?");
    const int version = *info.protocol;
    if (version > kProtocolVersion)
        return QStringLiteral("the worker speaks protocol %1, newer than this program's protocol %2: "
                              "use a workbench as new as the worker")
            .arg(version)
            .arg(kProtocolVersion);
    if (version < 1)
        return QStringLiteral("the worker states an invalid protocol version %1").arg(version);
    return {};
}

QString errorCode(const QJsonObject& response)
{
    return decodeHeader(response).errorCode;
}

QString errorMessage(const QJsonObject& response)
{
    return decodeHeader(response).errorMessage;
}

} // namespace ProtocolCodec

ResponseDecoder::ResponseDecoder(qsizetype maxLineBytes)
    : m_maxLineBytes(maxLineBytes)
{}

bool ResponseDecoder::feed(const QByteArray& bytes)
{
    if (m_failed)
        return false;
    m_buffer.append(bytes);
    qsizetype start = 0;
    for (;;) {
        const qsizetype newline = m_buffer.indexOf('\n', start);
        if (newline < 0)
            break;
        if (newline + 1 - start > m_maxLineBytes) {
            fail(QStringLiteral("a response line of %1 exceeds the limit of %2")
                     .arg(mebibytes(newline + 1 - start), mebibytes(m_maxLineBytes)));
            return false;
        }
        if (!decodeLine(m_buffer.mid(start, newline - start)))
            return false;
        start = newline + 1;
    }
    m_buffer.remove(0, start);
    // An unfinished line already over the limit can only end in a rejection: say so now instead
    // of buffering up to the worker's whim.
    if (m_buffer.size() >= m_maxLineBytes) {
        fail(QStringLiteral("a response line exceeds the limit of %1 (%2 read without a newline)")
                 .arg(mebibytes(m_maxLineBytes), mebibytes(m_buffer.size())));
        return false;
    }
    return true;
}

bool ResponseDecoder::decodeLine(QByteArray line)
{
    if (line.endsWith('\r'))
        line.chop(1);
    if (line.trimmed().isEmpty())
        return true; // blank lines carry nothing; tolerating them costs nothing
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(line, &error);
    if (error.error != QJsonParseError::NoError) {
        fail(QStringLiteral("broken response line (%1 at offset %2): %3")
                 .arg(error.errorString())
                 .arg(error.offset)
                 .arg(quoteStart(line)));
        return false;
    }
    if (!document.isObject()) {
        fail(QStringLiteral("response line is JSON but not an object: %1").arg(quoteStart(line)));
        return false;
    }
    m_responses.append(document.object());
    return true;
}

QList<QJsonObject> ResponseDecoder::takeResponses()
{
    QList<QJsonObject> responses;
    responses.swap(m_responses);
    return responses;
}

void ResponseDecoder::reset()
{
    m_buffer.clear();
    m_responses.clear();
    m_failed = false;
    m_error.clear();
}

void ResponseDecoder::fail(const QString& message)
{
    m_failed = true;
    m_error = message;
    m_buffer.clear();
}

} // namespace kwb

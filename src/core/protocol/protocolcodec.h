#pragma once
// Client side of docs/protocol.md: one JSON object per '\n'-terminated line, each line at most
// 16 MiB. The worker side (src/worker/protocol/protocol.h) has no Qt; the two meet in the document, its
// golden files under tests/protocol/ and the limits of core/protocol/protocollimits.h (plain C++,
// which both include).

#include "core/protocol/protocollimits.h"
#include "core/protocol/protocolnames.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>

namespace kwb {

/// The protocol version this client speaks. A worker that reports a newer one is refused.
constexpr int kProtocolVersion = ProtocolNames::kVersion; // the worker announces the same

/// The largest line either side may write, the terminating '\n' included: core/protocol/protocollimits.h's,
/// shared with the worker.
constexpr qsizetype kMaxLineBytes = qsizetype(ProtocolLimits::kMaxLineBytes);

namespace ProtocolCodec {

/// Encodes a request as one compact JSON line ending in '\n'. Returns an empty array and sets
/// *error when the line would exceed kMaxLineBytes (the worker would answer line_too_long).
QByteArray encodeRequest(const QJsonObject& request, QString* error = nullptr);

/// Checks a hello response. Returns an empty string when the worker speaks a protocol this
/// client understands, else a message for the user (newer protocol, missing version, not ok).
QString checkHello(const QJsonObject& helloResponse);

/// The `error.code` and `error.message` of an `ok: false` response (empty strings otherwise).
QString errorCode(const QJsonObject& response);
QString errorMessage(const QJsonObject& response);

} // namespace ProtocolCodec

/// Splits the worker's stdout into response objects. It fails into a terminal state on the first
/// line that is not a JSON object or that exceeds the line limit: after a broken line the stream
/// cannot be trusted to be in step with the requests, so nothing after it is decoded.
class ResponseDecoder
{
public:
    explicit ResponseDecoder(qsizetype maxLineBytes = kMaxLineBytes);

    /// Appends bytes read from the worker. Complete lines become responses (takeResponses()).
    /// Returns false once the decoder has failed.
    bool feed(const QByteArray& bytes);

    /// The responses decoded so far, in order; the decoder forgets them.
    QList<QJsonObject> takeResponses();

    bool hasFailed() const { return m_failed; }
    /// Why the decoder failed, quoting the start of the offending line.
    QString errorString() const { return m_error; }
    /// Bytes of an unfinished line still buffered.
    qsizetype pendingBytes() const { return m_buffer.size(); }

    /// Back to the initial state, for a fresh worker.
    void reset();

private:
    void fail(const QString& message);
    bool decodeLine(QByteArray line);

    qsizetype m_maxLineBytes;
    QByteArray m_buffer;
    QList<QJsonObject> m_responses;
    bool m_failed = false;
    QString m_error;
};

} // namespace kwb

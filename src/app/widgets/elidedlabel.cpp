#include "elidedlabel.h"

#include <QEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QStyle>
#include <QToolTip>

namespace kwb::app {

ElidedLabel::ElidedLabel(QWidget* parent)
    : ElidedLabel(QString(), parent)
{}

ElidedLabel::ElidedLabel(const QString& text, QWidget* parent)
    : QLabel(text, parent)
{
    setTextFormat(Qt::PlainText);
    setWordWrap(false);
    // As wide as the text where there is room, as narrow as the minimum where there is not.
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void ElidedLabel::setElideMode(Qt::TextElideMode mode)
{
    m_mode = mode;
    update();
}

QString ElidedLabel::oneLine() const
{
    QString line = text();
    line.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return line;
}

QString ElidedLabel::shownText() const
{
    return fontMetrics().elidedText(oneLine(), m_mode, qMax(0, contentsRect().width() - 2 * margin()));
}

bool ElidedLabel::isElided() const
{
    return shownText() != oneLine();
}

QString ElidedLabel::effectiveToolTip() const
{
    if (!isElided())
        return toolTip();
    return toolTip().isEmpty() ? text() : text() + QStringLiteral("\n\n") + toolTip();
}

QSize ElidedLabel::sizeHint() const
{
    const QFontMetrics fm = fontMetrics();
    const QMargins m = contentsMargins();
    return QSize(fm.horizontalAdvance(oneLine()) + 2 * margin() + m.left() + m.right() + 1,
                 fm.height() + 2 * margin() + m.top() + m.bottom());
}

QSize ElidedLabel::minimumSizeHint() const
{
    // A few characters and the ellipsis: enough to see that there is text and where it starts.
    const QFontMetrics fm = fontMetrics();
    const QSize full = sizeHint();
    return QSize(qMin(full.width(), fm.horizontalAdvance(QStringLiteral("xxxxxx…")) + 2 * margin()), full.height());
}

bool ElidedLabel::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip) {
        const QString tip = effectiveToolTip();
        if (tip.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(static_cast<QHelpEvent*>(e)->globalPos(), tip, this);
        return true;
    }
    return QLabel::event(e);
}

void ElidedLabel::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    drawFrame(&painter);
    const QRect r = contentsRect().adjusted(margin(), margin(), -margin(), -margin());
    style()->drawItemText(&painter, r, int(QStyle::visualAlignment(layoutDirection(), alignment())), palette(),
                          isEnabled(), shownText(), foregroundRole());
}

} // namespace kwb::app

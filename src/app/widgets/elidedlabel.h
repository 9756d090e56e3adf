#pragma once
// A one-line label whose text can never widen the window: it asks for the width of its whole
// text but accepts a few characters, draws what does not fit elided ("…"), and shows the whole
// text in its tooltip (before its own tooltip, if it has one). text() stays the whole text, so it
// reads as any QLabel does. Plain text only; line breaks are drawn as spaces.
//
// Why: a QLabel's minimum width is its text's width, and a layout passes that up to the window.
// A failed launch's error on the Monitor made the window 2,766 px wide, and the width was saved
// (issue 38).

#include <QLabel>

namespace kwb::app {

class ElidedLabel : public QLabel
{
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget* parent = nullptr);
    explicit ElidedLabel(const QString& text, QWidget* parent = nullptr);

    /// Where the "…" goes: Qt::ElideRight by default, Qt::ElideMiddle for paths (keeps the file name).
    void setElideMode(Qt::TextElideMode mode);
    Qt::TextElideMode elideMode() const { return m_mode; }

    /// What is drawn at the present width.
    QString shownText() const;
    bool isElided() const;
    /// What the tooltip shows: the whole text where it is elided, then the label's own tooltip.
    QString effectiveToolTip() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    bool event(QEvent* e) override;
    void paintEvent(QPaintEvent* e) override;

private:
    QString oneLine() const;
    Qt::TextElideMode m_mode = Qt::ElideRight;
};

} // namespace kwb::app

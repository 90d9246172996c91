import CofferStore
import Foundation

/// The dashboard's chart: purchases and refunds per day as inline SVG, drawn on the server.
public enum DashboardChart {
    static let purchaseColour = "#2457c5"
    static let refundColour = "#c62828"
    static let inkColour = "#5f6b7a"

    /// The SVG for `days`, oldest first.
    public static func svg(_ days: [DayFigures]) -> String {
        let (width, height, left, bottom, top) = (720.0, 220.0, 36.0, 24.0, 10.0)
        let plotHeight = height - bottom - top
        let peak = max(1, days.map { max($0.purchases, $0.refunds) }.max() ?? 1)
        let slot = (width - left) / Double(max(1, days.count))
        let bar = max(1, slot / 2 - 1)
        var utc = Date.FormatStyle().month(.abbreviated).day().locale(Locale(identifier: "en_US_POSIX"))
        utc.timeZone = TimeZone(identifier: "UTC")!
        func label(_ x: Double, _ y: Double, _ text: String, anchor: String = "start") -> String {
            "<text x=\"\(x)\" y=\"\(y)\" text-anchor=\"\(anchor)\" font-size=\"11\" fill=\"\(inkColour)\">\(text)</text>"
        }
        var parts = [
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" "
                + "aria-label=\"Purchases and refunds per day\" id=\"chart\">",
            "<line x1=\"\(left)\" y1=\"\(top + plotHeight)\" x2=\"\(width)\" y2=\"\(top + plotHeight)\" "
                + "stroke=\"#c4ccd6\"/>",
            label(left - 4, top + 8, String(peak), anchor: "end"),
            label(left - 4, top + plotHeight, "0", anchor: "end"),
        ]
        for (index, day) in days.enumerated() {
            let x = left + Double(index) * slot
            let name = day.day.formatted(utc)
            for (offset, count, colour, kind) in [
                (0.0, day.purchases, purchaseColour, "purchases"), (bar + 1, day.refunds, refundColour, "refunds"),
            ] where count > 0 {
                let h = plotHeight * Double(count) / Double(peak)
                parts.append(
                    "<rect x=\"\(x + offset)\" y=\"\(top + plotHeight - h)\" width=\"\(bar)\" height=\"\(h)\" "
                        + "fill=\"\(colour)\"><title>\(name): \(count) \(kind)</title></rect>")
            }
            // A label a week, and one for today unless the last weekly label is too close to it.
            if index % 7 == 0 || (index == days.count - 1 && index % 7 >= 4) {
                parts.append(label(x, height - 6, name))
            }
        }
        parts.append(
            "<rect x=\"\(width - 170)\" y=\"\(top)\" width=\"10\" height=\"10\" fill=\"\(purchaseColour)\"/>"
                + label(width - 156, top + 9, "purchases")
                + "<rect x=\"\(width - 90)\" y=\"\(top)\" width=\"10\" height=\"10\" fill=\"\(refundColour)\"/>"
                + label(width - 76, top + 9, "refunds"))
        parts.append("</svg>")
        return parts.joined(separator: "\n")
    }
}

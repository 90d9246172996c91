import Foundation

/// Whole milliseconds since 1970, the way Apple and Coffer's stores write dates.
public enum Milliseconds {
    /// The date in whole milliseconds since 1970, clamped to Int64's range: never traps, whatever the date.
    public static func from(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1_000).rounded()
        guard value.isFinite else { return value > 0 ? .max : .min }
        // 2^63 is exactly representable as a Double; anything at or past it does not fit.
        if value >= 9_223_372_036_854_775_808.0 { return .max }
        if value < -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value)
    }

    /// The date `milliseconds` after 1970.
    public static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1_000)
    }

    /// Whole seconds since 1970 rounded down, clamped like ``from(_:)``.
    public static func seconds(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970.rounded(.down)
        guard value.isFinite else { return value > 0 ? .max : .min }
        if value >= 9_223_372_036_854_775_808.0 { return .max }
        if value < -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value)
    }
}

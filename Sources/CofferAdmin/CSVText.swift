/// Comma-separated values as spreadsheets read them (RFC 4180): every field quoted, quotes doubled, lines ended
/// with CRLF; a field that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or a carriage return
/// first) gets a leading apostrophe, so a customer's text or an admin's reason cannot become one.
public enum CSVText {
    /// The document: a header line, then a line per row.
    public static func document(header: [String], rows: [[String]]) -> String {
        ([header] + rows).map { line($0) }.joined()
    }

    /// One line.
    public static func line(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }

    /// One field, quoted.
    public static func field(_ text: String) -> String {
        var safe = text
        if let first = text.unicodeScalars.first, ["=", "+", "-", "@", "\t", "\r"].contains(first) {
            // Negative numbers stay numbers: only text that is not one is guarded.
            if Double(text) == nil { safe = "'" + text }
        }
        return "\"" + safe.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

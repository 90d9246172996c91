import Foundation

/// Percent-encoding for the admin API's paths and queries and the panel's links: everything but RFC 3986's
/// unreserved characters, so a Support ID or a search reaches the server as typed and signs the same.
public enum URLText {
    /// `text` with every character but letters, digits and `-._~` percent-encoded.
    public static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? ""
    }
}

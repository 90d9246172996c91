import CofferCore
import CofferService
import Foundation

extension ServeSettings {
    /// The endpoint `webhook.url` and `webhook.secret` name (with `webhook.previous.secret` during a rotation).
    ///
    /// - Throws: ``SettingsError`` for a URL or secret that cannot be taken, or one without the other.
    static func webhook(_ values: SettingValues) throws(SettingsError) -> WebhookSettings? {
        let (url, secret, previous) = (
            values.text("webhook.url"), values.text("webhook.secret"), values.text("webhook.previous.secret")
        )
        guard let url, !url.isEmpty else {
            if secret != nil {
                throw SettingsError(key: "webhook.url", value: nil, expected: "a URL with webhook.secret")
            }
            return nil
        }
        if let problem = WebhookRules.problem(url: url) {
            throw SettingsError(key: "webhook.url", value: url, expected: "an https:// URL (it is \(problem))")
        }
        guard let secret else {
            throw SettingsError(key: "webhook.secret", value: nil, expected: "a secret with webhook.url")
        }
        if let problem = WebhookRules.problem(secret: secret) {
            throw SettingsError(key: "webhook.secret", value: "(hidden)", expected: problem)
        }
        if let previous, let problem = WebhookRules.problem(secret: previous) {
            throw SettingsError(key: "webhook.previous.secret", value: "(hidden)", expected: problem)
        }
        return WebhookSettings(url: url, secret: secret, previousSecret: previous)
    }

    /// `apple.forward.url`: each URL checked.
    ///
    /// - Throws: ``SettingsError`` for one that cannot be taken, or more than 8.
    static func appleForwardURLs(_ values: SettingValues) throws(SettingsError) -> [String] {
        let urls = (values.text("apple.forward.url") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        guard urls.count <= 8 else {
            throw SettingsError(key: "apple.forward.url", value: "\(urls.count) URLs", expected: "at most 8 URLs")
        }
        for url in urls {
            if let problem = WebhookRules.problem(url: url) {
                throw SettingsError(
                    key: "apple.forward.url", value: url, expected: "an https:// URL (it is \(problem))")
            }
        }
        return urls
    }
}

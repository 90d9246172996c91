/// What an event on `GET /v1/me/events` says changed.
public enum ServerEventKind: String, Codable, Sendable, CaseIterable {
    /// Support granted credits: fetch the pending grants.
    case grant
    /// The server detected a refund, a reversal or an admin edit: fetch the adjustments.
    case adjustment
    /// The backup changed (an admin edit, another device): fetch the backup.
    case backup
    /// A purchase, renewal or expiry changed the entitlements: fetch `/v1/me`.
    case entitlements
    /// A parent or guardian withdrew consent for the account (Apple's RESCIND_CONSENT): the app may no longer
    /// offer purchases to this customer until consent is given again.
    case consentRescinded = "consent-rescinded"
}

import CofferStore
import Foundation
import Hummingbird

extension AuditQuery {
    /// The audit log's filter a request's query names, for the panel's page and the admin API alike: an admin
    /// (`admin`), a customer's Support ID (`customer`) and an action or its family (`action`); blank ones are
    /// left out.
    public init(_ request: Request) {
        func value(_ name: String) -> String? {
            let text = (request.uri.queryParameters.get(name) ?? "").trimmingCharacters(in: .whitespaces)
            return text.isEmpty ? nil : text
        }
        self.init(subject: value("customer"), admin: value("admin"), action: value("action"))
    }
}

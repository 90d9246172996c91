import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird

/// Why the panel refused a request before doing anything.
enum PanelRefusal: Error {
    case csrf
    case tooLarge
    /// The page or action is an owner's; the signed-in admin is support.
    case ownerOnly
}

extension CofferRequestContext {
    func requireSession() throws -> AdminSession {
        guard let adminSession else { throw PanelRefusal.csrf }
        return adminSession
    }

    /// The session of an owner; a support admin's request is refused (403) before anything is done.
    func requireOwner() throws -> AdminSession {
        let session = try requireSession()
        guard panelAdmin?.role == .owner else { throw PanelRefusal.ownerOnly }
        return session
    }
}

/// Sends requests without a valid session to the sign-in page, and answers the panel's refusals with a page
/// that says nothing was changed.
struct SessionMiddleware: RouterMiddleware {
    typealias Context = CofferRequestContext
    let panel: AdminPanel

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let session = try await SignInController(panel: panel).session(request) else {
            return AdminPanel.redirect("/admin/login")
        }
        // The password was right but the code is still to come: only the code page opens.
        guard !session.twoFactorPending else { return AdminPanel.redirect("/admin/login/code") }
        // A disabled admin's sessions end with the change; one opened while it was made ends here.
        guard let admin = try await panel.signIn.admin(of: session) else { return AdminPanel.redirect("/admin/login") }
        var context = context
        context.adminSession = session
        // The admin as stored now: a role an owner changed applies to the next request.
        context.panelAdmin = admin
        context.adminTimeZone = admin.timeZone.flatMap(PanelText.timeZone)
        // The audit log names the admin and the real client address (behind trusted proxies, the forwarded one).
        context.admin = "\(session.adminName) from \(context.clientAddress ?? "this machine")"
        do {
            return try await next(request, context)
        } catch let refusal as PanelRefusal {
            let (reason, status): (MessagePage.Reason, HTTPResponse.Status) =
                switch refusal {
                case .csrf: (.staleForm, .forbidden)
                case .ownerOnly: (.ownerOnly, .forbidden)
                case .tooLarge: (.formTooLarge, .contentTooLarge)
                }
            return panel.render(
                MessagePage(heading: .notDone, reason: reason, link: "/admin", linkText: .dashboard), context,
                status: status)
        }
    }
}

/// Refuses the panel to other machines unless `panel.remote` is on (judged by the real client address, so a
/// reverse proxy on this machine does not make every visitor local), and to Host names other than loopback
/// names and the configured public host (so a page whose name was rebound to 127.0.0.1 cannot reach it).
struct LoopbackOnlyMiddleware: RouterMiddleware {
    typealias Context = CofferRequestContext
    let allowRemote: Bool
    let hosts: PanelHosts

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if !allowRemote, let address = context.clientAddress, !AddressRange.isLoopback(address) {
            return AdminPanel.html(
                "<!doctype html><p>The Coffer panel answers only on its own machine.</p>", status: .forbidden)
        }
        guard hosts.allows(request.head.authority) else {
            return AdminPanel.html(
                "<!doctype html><p>The Coffer panel does not answer to this Host name: it answers to localhost "
                    + "names, and to panel.host when panel.remote is on.</p>",
                status: .misdirectedRequest)
        }
        return try await next(request, context)
    }
}

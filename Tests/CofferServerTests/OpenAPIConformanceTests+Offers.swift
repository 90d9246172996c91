import CofferAPI
import CofferServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

extension OpenAPIConformanceTests {
    /// The offer routes answer as documented: without an In-App Purchase key (offers-unavailable) and with one
    /// (signed, and each refusal).
    static func offers(_ api: DocumentedAPI, setup: Setup) async throws {
        let sign = "/v1/me/offers/sign"
        let eligibility = "/v1/me/offers/introductory-eligibility"
        let offer = try DocumentedAPI.RequestBody.json(
            OfferSignatureRequest(productId: "com.example.pro.monthly", offerId: "winback"))
        let intro = try DocumentedAPI.RequestBody.json(IntroductoryOfferRequest(productId: "com.example.pro.monthly"))
        @Sendable func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            try await api.send(
                client, .post, sign, headers: bearer(user.token), body: offer, expect: .serviceUnavailable)
            try await api.send(
                client, .post, eligibility, headers: bearer(user.token), body: intro, expect: .serviceUnavailable)
        }
        try await OfferSignatureTests.withKey(P256.Signing.PrivateKey()) { key in
            try await setup.application(api: key).test(.router) { client in
                let (alice, _) = try await OfferSignatureTests.register("olga", setup, client)
                let anonymous = try await NotificationTests.createUser(client)
                try await api.send(client, .post, sign, headers: bearer(alice.token), body: offer, expect: .ok)
                try await api.send(client, .post, eligibility, headers: bearer(alice.token), body: intro, expect: .ok)
                // Nothing to tie a signature to: a yes goes unsigned, an offer is refused.
                try await api.send(
                    client, .post, eligibility, headers: bearer(anonymous.token), body: intro, expect: .ok)
                try await api.send(
                    client, .post, sign, headers: bearer(anonymous.token), body: offer, expect: .notFound)
                let consumable = try DocumentedAPI.RequestBody.json(
                    OfferSignatureRequest(productId: "com.example.credits", offerId: "winback"))
                try await api.send(
                    client, .post, sign, headers: bearer(alice.token), body: consumable, expect: .badRequest)
                try await api.send(
                    client, .post, eligibility, headers: bearer(alice.token),
                    body: try .json(IntroductoryOfferRequest(productId: "com.example.credits")), expect: .badRequest)
                let unknown = try DocumentedAPI.RequestBody.json(
                    OfferSignatureRequest(productId: "com.example.gems", offerId: "winback"))
                try await api.send(
                    client, .post, sign, headers: bearer(alice.token), body: unknown, expect: .unprocessableContent)
                try await api.send(
                    client, .post, eligibility, headers: bearer(alice.token),
                    body: try .json(IntroductoryOfferRequest(productId: "com.example.gems")),
                    expect: .unprocessableContent)
                try await api.send(
                    client, .post, sign, headers: bearer(alice.token), body: .invalid(#"{"productId": "p"}"#),
                    expect: .badRequest)
                try await api.send(client, .post, sign, body: offer, expect: .unauthorized)
                try await api.send(client, .post, eligibility, body: intro, expect: .unauthorized)
            }
        }
    }
}

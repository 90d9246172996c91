import CofferAdmin
import CofferCore
import CofferHTTP
import Hummingbird

/// `/admin`: the dashboard.
struct DashboardController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get { _, context in try await dashboard(context) }
        return routes
    }

    func dashboard(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let scope = panel.scope(session)
        let figures = try await panel.service.dashboard(environment: scope.environment)
        let health = try await panel.service.appleHealth(environment: scope.environment)
        let catalog = panel.service.catalog
        let page = DashboardPage(
            figures: DashboardPage.Figures(
                users: PanelText.count(figures.users), pendingGrants: PanelText.count(figures.pendingGrants),
                claimedGrants: PanelText.count(figures.claimedGrants), purchases: PanelText.count(figures.purchases),
                refunds: PanelText.count(figures.refunds), usersInDeficit: PanelText.count(figures.usersInDeficit),
                outstandingDeficit: PanelText.credits(figures.outstandingDeficit),
                otherEnvironmentPurchases: PanelText.count(figures.otherEnvironmentPurchases),
                otherEnvironmentCustomers: PanelText.count(figures.otherEnvironmentCustomers),
                otherEnvironmentCredits: PanelText.credits(figures.otherEnvironmentCredits),
                otherEnvironmentSubscriptions: PanelText.count(figures.otherEnvironmentSubscriptions),
                currencyName: catalog.currencyName(catalog.defaultCurrency).lowercased(),
                currencyDeficits: figures.currencyDeficits.map {
                    .init(
                        currency: $0.currency,
                        name: Currency(rawValue: $0.currency).map(catalog.currencyName)?.lowercased() ?? $0.currency,
                        amount: PanelText.credits($0.outstandingDeficit), users: PanelText.count($0.usersInDeficit))
                }),
            otherEnvironment: scope.environment == .production ? "Sandbox" : "Production",
            hasOtherEnvironment: figures.otherEnvironmentPurchases > 0 || figures.otherEnvironmentCustomers > 0,
            chart: DashboardChart.svg(figures.days),
            money: DashboardPage.Money(figures, catalog: panel.service.catalog),
            apple: DashboardPage.AppleCard(
                health, refusals: panel.dependencies.metrics.notificationRefusals,
                recoveryOn: panel.dependencies.appStoreAPI != nil, now: panel.now, time: panel.times(context)))
        return panel.render(page, context, notice: scope.sandboxMarkedOnly ? .sandboxMarkedView : nil)
    }
}

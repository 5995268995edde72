use halo_macros::halo;

#[halo(next(when = "status=pending", suggets = "/orders/confirm"))]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}

use halo_macros::halo;

#[halo(idempotency_key = "Idempotency Key")]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}

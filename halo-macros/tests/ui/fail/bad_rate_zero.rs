use halo_macros::halo;

#[halo(rate = "0/minute")]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}

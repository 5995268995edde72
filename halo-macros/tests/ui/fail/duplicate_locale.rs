use halo_macros::halo;

#[halo(locale("zh", name = "下单"), locale("zh", why = "再次"))]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
